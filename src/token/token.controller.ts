import { Body, Controller, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type AnswerDeadline, Deadline } from '../common/http/request-deadlines.js';
import { type Requester, RequestedBy } from '../common/http/requester.js';
import { RequestHeader } from '../common/http/request-header.decorator.js';
import { NO_STORE_HEADERS } from '../oauth/api-oauth-error-response.decorator.js';
import { SsoTokenRequestDto } from './dto/token-request.dto.js';
import { UserTokenResponseDto } from './dto/token-response.dto.js';
import { OAuthExceptionFilter } from '../oauth/oauth-exception.filter.js';
import { FORM_INVALID_REQUEST, OAuthFormRoute } from '../oauth/oauth-form-route.decorator.js';
import { TokenService } from './token.service.js';

@ApiTags('sso')
@Controller('sso')
@UseFilters(OAuthExceptionFilter)
export class TokenController {
  constructor(private readonly tokens: TokenService) {}

  @Post('token')
  @HttpCode(200)
  @OAuthFormRoute(
    SsoTokenRequestDto,
    `${FORM_INVALID_REQUEST}; \`unsupported_grant_type\`; \`unauthorized_client\` (the client is not registered for the grant); \`invalid_scope\`; \`invalid_grant\` (a code or refresh token that is unknown, expired, already used, another client's, or whose grant was revoked; a PKCE or redirect_uri mismatch; a used code or a reused refresh token also revokes its grant); device grant: \`authorization_pending\`, \`slow_down\` (the interval grows by 5 s), \`access_denied\`, \`expired_token\``,
  )
  @ApiOperation({ summary: 'Exchange an authorization code, a refresh token or a device code for tokens (RFC 6749 §4.1.3, §6; RFC 8628 §3.4)' })
  @ApiOkResponse({ type: UserTokenResponseDto, headers: NO_STORE_HEADERS })
  token(
    @Body() body: unknown,
    @Deadline() deadline: AnswerDeadline,
    @RequestedBy() requester: Requester,
    @RequestHeader('authorization') authorization?: string,
    @RequestHeader('content-type') contentType?: string,
  ) {
    return this.tokens.ssoToken(body, authorization, contentType, deadline, requester);
  }
}
