import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { KeysService } from './keys.service.js';

@ApiTags('keys')
@Controller('.well-known')
export class JwksController {
  constructor(private readonly keys: KeysService) {}

  @Get('jwks.json')
  @Header('Content-Type', 'application/jwk-set+json; charset=utf-8')
  @Header('Cache-Control', 'public, max-age=60')
  @ApiOperation({ summary: 'Public keys that verify access tokens (RFC 7517): the current key and recently retired ones, never revoked ones' })
  @ApiOkResponse({ description: '`{ keys: JWK[] }`, public parts only' })
  jwks() {
    return this.keys.jwks();
  }
}
