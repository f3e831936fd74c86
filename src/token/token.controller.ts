import { Body, Controller, Headers, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConsumes, ApiOkResponse, ApiOperation, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { NoStore } from './no-store.decorator.js';
import { OAuthExceptionFilter } from './oauth-exception.filter.js';
import { TokenService } from './token.service.js';

@ApiTags('sso')
@Controller('sso')
@UseFilters(OAuthExceptionFilter)
export class TokenController {
  constructor(private readonly tokens: TokenService) {}

  @Post('token')
  @HttpCode(200)
  @NoStore()
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiOperation({ summary: 'Exchange an authorization code or a refresh token (seed 000 endpoint 3, RFC 6749 §4.1.3, §6)' })
  @ApiOkResponse({ description: '`{access_token, expires_in: 3600, token_type: "bearer", scope, refresh_token}`' })
  @ApiBadRequestResponse({ description: 'RFC 6749 §5.2 `{error, error_description}`' })
  @ApiUnauthorizedResponse({ description: '`invalid_client`' })
  token(@Body() body: unknown, @Headers('authorization') authorization?: string, @Headers('content-type') contentType?: string) {
    return this.tokens.ssoToken(body, authorization, contentType);
  }
}
