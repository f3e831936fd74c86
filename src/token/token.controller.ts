import { Body, Controller, Headers, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { OAuthExceptionFilter } from './oauth-exception.filter.js';
import { OAuthFormRoute } from './oauth-form-route.decorator.js';
import { TokenService } from './token.service.js';

@ApiTags('sso')
@Controller('sso')
@UseFilters(OAuthExceptionFilter)
export class TokenController {
  constructor(private readonly tokens: TokenService) {}

  @Post('token')
  @HttpCode(200)
  @OAuthFormRoute()
  @ApiOperation({ summary: 'Exchange an authorization code, a refresh token or a device code for tokens (RFC 6749 §4.1.3, §6; RFC 8628 §3.4)' })
  @ApiOkResponse({ description: '`{access_token, expires_in: 3600, token_type: "bearer", scope, refresh_token}`' })
  token(@Body() body: unknown, @Headers('authorization') authorization?: string, @Headers('content-type') contentType?: string) {
    return this.tokens.ssoToken(body, authorization, contentType);
  }
}
