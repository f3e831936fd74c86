import { applyDecorators, Body, Controller, Get, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { RequestHeader } from '../common/http/request-header.decorator.js';
import { ApiOAuthErrorResponse, ApiOAuthUnavailableResponse, NO_STORE_HEADERS } from '../oauth/api-oauth-error-response.decorator.js';
import { NoStore } from '../oauth/no-store.decorator.js';
import { BearerExceptionFilter } from '../bearer/bearer-exception.filter.js';
import { UserinfoDto, UserinfoFormDto } from './dto/userinfo.dto.js';
import { UserinfoService } from './userinfo.service.js';

const CHALLENGE = {
  'WWW-Authenticate': {
    description: 'RFC 6750 §3: `Bearer realm="voyage-connect"`, with `error` (and `error_description` or `scope`) when a token was sent',
    schema: { type: 'string' },
  },
};

const SUMMARY = "The signed-in user's claims (OpenID Connect Core §5.3) for an access token with scope openid: `sub`, and the claims of `profile` and `email`";

/** What both methods answer to a refused token, and when the database is away. */
const ApiUserinfoRefusals = () =>
  applyDecorators(
    ApiOAuthErrorResponse(401, '`invalid_token`: no token (the challenge then has no error code), or a malformed, forged, expired or revoked one, one of a revoked grant, of a disabled client or of a disabled user', CHALLENGE),
    ApiOAuthErrorResponse(403, "`insufficient_scope`: the token's scope lacks `openid`, or it is a client credentials token (it has no user)", CHALLENGE),
    ApiOAuthUnavailableResponse(),
  );

@ApiTags('sso')
@Controller('sso/userinfo')
@UseFilters(BearerExceptionFilter)
export class UserinfoController {
  constructor(private readonly userinfo: UserinfoService) {}

  @Get()
  @NoStore()
  @ApiOperation({ summary: SUMMARY })
  @ApiBearerAuth()
  @ApiOkResponse({ type: UserinfoDto, headers: NO_STORE_HEADERS })
  @ApiUserinfoRefusals()
  get(@RequestHeader('authorization') authorization?: string) {
    return this.userinfo.fromHeader(authorization);
  }

  @Post()
  @HttpCode(200)
  @NoStore()
  @ApiOperation({ summary: SUMMARY, description: 'The token in the Authorization header, or as `access_token` in a form body (RFC 6750 §2.2), never both.' })
  @ApiSecurity({})
  @ApiBearerAuth()
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: UserinfoFormDto, required: false })
  @ApiOkResponse({ type: UserinfoDto, headers: NO_STORE_HEADERS })
  @ApiOAuthErrorResponse(400, '`invalid_request`: the token both in the header and in the body, a repeated parameter, or a NUL character', CHALLENGE)
  @ApiUserinfoRefusals()
  @ApiOAuthErrorResponse(413, '`invalid_request`: the body is over 64 KiB')
  @ApiOAuthErrorResponse(415, '`invalid_request`: a body that is not a form')
  post(@Body() body: unknown, @RequestHeader('authorization') authorization?: string, @RequestHeader('content-type') contentType?: string) {
    return this.userinfo.fromForm(authorization, contentType, body);
  }
}
