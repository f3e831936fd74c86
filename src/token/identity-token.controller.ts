import { Body, Controller, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type Requester, RequestedBy } from '../common/http/requester.js';
import { RequestHeader } from '../common/http/request-header.decorator.js';
import { NO_STORE_HEADERS } from '../oauth/api-oauth-error-response.decorator.js';
import { ClientCredentialsRequestDto } from './dto/token-request.dto.js';
import { ClientTokenResponseDto } from './dto/token-response.dto.js';
import { OAuthExceptionFilter } from '../oauth/oauth-exception.filter.js';
import { FORM_INVALID_REQUEST, OAuthFormRoute } from '../oauth/oauth-form-route.decorator.js';
import { TokenService } from './token.service.js';

@ApiTags('notifications')
@Controller('public/api/oauth2')
@UseFilters(OAuthExceptionFilter)
export class IdentityTokenController {
  constructor(private readonly tokens: TokenService) {}

  @Post('token')
  @HttpCode(200)
  @OAuthFormRoute(
    ClientCredentialsRequestDto,
    `${FORM_INVALID_REQUEST}; \`unsupported_grant_type\` (anything but client_credentials); \`unauthorized_client\` (the client is not registered for client_credentials); \`invalid_scope\`; \`invalid_target\` (a resource that is not an absolute URI, has a fragment, or is not in ALLOWED_RESOURCES)`,
  )
  @ApiOperation({ summary: 'Client-credentials token for the notification routes and stream (RFC 6749 §4.4, RFC 8707 resource)' })
  @ApiOkResponse({ type: ClientTokenResponseDto, headers: NO_STORE_HEADERS })
  token(@Body() body: unknown, @RequestedBy() requester: Requester, @RequestHeader('authorization') authorization?: string, @RequestHeader('content-type') contentType?: string) {
    return this.tokens.identityToken(body, authorization, contentType, requester);
  }
}
