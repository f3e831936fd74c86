import { Body, Controller, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type Requester, RequestedBy } from '../common/http/requester.js';
import { RequestHeader } from '../common/http/request-header.decorator.js';
import { NO_STORE_HEADERS } from '../oauth/api-oauth-error-response.decorator.js';
import { IntrospectionResponseDto, TokenFormDto } from './dto/token-inspection.dto.js';
import { OAuthExceptionFilter } from '../oauth/oauth-exception.filter.js';
import { FORM_INVALID_REQUEST, OAuthFormRoute } from '../oauth/oauth-form-route.decorator.js';
import { TokenInspectionService } from './token-inspection.service.js';

@ApiTags('sso')
@Controller('sso')
@UseFilters(OAuthExceptionFilter)
export class TokenInspectionController {
  constructor(private readonly inspection: TokenInspectionService) {}

  @Post('introspect')
  @HttpCode(200)
  @OAuthFormRoute(TokenFormDto, FORM_INVALID_REQUEST)
  @ApiOperation({ summary: "Token introspection (RFC 7662) of the calling client's own access and refresh tokens" })
  @ApiOkResponse({
    type: IntrospectionResponseDto,
    headers: NO_STORE_HEADERS,
    description: "`{active: false}` for an unknown, expired, revoked, rotated-out or another client's token (and an access token of a revoked grant)",
  })
  introspect(@Body() body: unknown, @RequestedBy() requester: Requester, @RequestHeader('authorization') authorization?: string, @RequestHeader('content-type') contentType?: string) {
    return this.inspection.introspect(body, authorization, contentType, requester);
  }

  @Post('revoke')
  @HttpCode(200)
  @OAuthFormRoute(TokenFormDto, `${FORM_INVALID_REQUEST}; \`invalid_request\` also for a token issued to another client (RFC 7009 §2.1)`)
  @ApiOperation({ summary: 'Token revocation (RFC 7009); revoking a refresh token ends its whole grant' })
  @ApiOkResponse({ description: 'empty body, also for an unknown, expired or already revoked token (RFC 7009 §2.2); open streams of the token or grant close with 1008', headers: NO_STORE_HEADERS })
  async revoke(@Body() body: unknown, @RequestedBy() requester: Requester, @RequestHeader('authorization') authorization?: string, @RequestHeader('content-type') contentType?: string): Promise<void> {
    await this.inspection.revoke(body, authorization, contentType, requester);
  }
}
