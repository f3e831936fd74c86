import { Controller, Get, Header, NotFoundException, Param } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Env } from '../config/env.js';
import { authorizationServerMetadata, METADATA_CACHE_CONTROL } from './authorization-server-metadata.js';
import { AuthorizationServerMetadataDto } from './dto/authorization-server-metadata.dto.js';

@ApiTags('sso')
@Controller('.well-known')
export class MetadataController {
  constructor(private readonly env: Env) {}

  @Get('oauth-authorization-server')
  @Header('Cache-Control', METADATA_CACHE_CONTROL)
  @ApiOperation({
    summary: 'Authorization server metadata (RFC 8414)',
    description: 'When IDENTITY_URL has a path, the same document is also served at this path followed by that path (RFC 8414 §3.1); any other path below it is a 404.',
  })
  @ApiOkResponse({ type: AuthorizationServerMetadataDto, headers: { 'Cache-Control': { description: `\`${METADATA_CACHE_CONTROL}\``, schema: { type: 'string' } } } })
  metadata(): AuthorizationServerMetadataDto {
    return this.document();
  }

  /** RFC 8414 §3.1: for an issuer with a path, the metadata lives under the well-known path plus that path. */
  @Get('oauth-authorization-server/*')
  @Header('Cache-Control', METADATA_CACHE_CONTROL)
  @ApiExcludeEndpoint()
  metadataForIssuerPath(@Param('*') issuerPath: string): AuthorizationServerMetadataDto {
    if (`/${issuerPath}` !== new URL(this.env.identityUrl).pathname) throw new NotFoundException();
    return this.document();
  }

  private document(): AuthorizationServerMetadataDto {
    return authorizationServerMetadata(this.env);
  }
}
