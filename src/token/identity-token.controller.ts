import { Body, Controller, Headers, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { OAuthExceptionFilter } from './oauth-exception.filter.js';
import { OAuthFormRoute } from './oauth-form-route.decorator.js';
import { TokenService } from './token.service.js';

@ApiTags('notifications')
@Controller('public/api/oauth2')
@UseFilters(OAuthExceptionFilter)
export class IdentityTokenController {
  constructor(private readonly tokens: TokenService) {}

  @Post('token')
  @HttpCode(200)
  @OAuthFormRoute()
  @ApiOperation({ summary: 'Client-credentials token for the notification routes and stream (RFC 6749 §4.4, RFC 8707 resource)' })
  @ApiOkResponse({ description: '`{access_token, expires_in, token_type: "Bearer", scope, resource?}`' })
  token(@Body() body: unknown, @Headers('authorization') authorization?: string, @Headers('content-type') contentType?: string) {
    return this.tokens.identityToken(body, authorization, contentType);
  }
}
