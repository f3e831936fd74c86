import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Env } from '../config/env.js';
import { METADATA_CACHE_CONTROL } from '../token/authorization-server-metadata.js';
import { OpenIdConfigurationDto } from './dto/openid-configuration.dto.js';
import { openIdConfiguration } from './openid-configuration.js';

@ApiTags('sso')
@Controller('.well-known')
export class DiscoveryController {
  private readonly document: OpenIdConfigurationDto;

  constructor(env: Env) {
    this.document = openIdConfiguration(env);
  }

  @Get('openid-configuration')
  @Header('Cache-Control', METADATA_CACHE_CONTROL)
  @ApiOperation({
    summary: 'OpenID Provider metadata (OpenID Connect Discovery 1.0)',
    description: "The RFC 8414 document's fields, with the same values, plus OpenID Connect's. When IDENTITY_URL has a path, the document is also served at that path followed by this one (Discovery §4).",
  })
  @ApiOkResponse({ type: OpenIdConfigurationDto, headers: { 'Cache-Control': { description: `\`${METADATA_CACHE_CONTROL}\``, schema: { type: 'string' } } } })
  configuration(): OpenIdConfigurationDto {
    return this.document;
  }
}
