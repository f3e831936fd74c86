import { Controller, Get, Header } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { ApiUnavailableResponse } from '../common/errors/api-error-response.decorator.js';
import { JWKS_MAX_AGE } from '../config/env.js';
import { JwksDto } from './dto/jwks.dto.js';
import { KeysService } from './keys.service.js';

@ApiTags('keys')
@Controller('.well-known')
export class JwksController {
  constructor(private readonly keys: KeysService) {}

  @Get('jwks.json')
  @Header('Content-Type', 'application/jwk-set+json; charset=utf-8')
  @Header('Cache-Control', `public, max-age=${JWKS_MAX_AGE}`)
  @ApiOperation({
    summary:
      "Public keys that verify the service's tokens (RFC 7517): the current ES256 and RS256 keys, one of each algorithm a rotation published to sign next, and recently retired ones, never revoked ones",
  })
  @ApiExtraModels(JwksDto)
  @ApiOkResponse({
    description: 'public parts only',
    content: { 'application/jwk-set+json': { schema: { $ref: getSchemaPath(JwksDto) } } },
    headers: { 'Cache-Control': { description: `\`public, max-age=${JWKS_MAX_AGE}\``, schema: { type: 'string' } } },
  })
  @ApiUnavailableResponse()
  jwks() {
    return this.keys.jwks();
  }
}
