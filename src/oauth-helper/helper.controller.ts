import { Controller, Get, HttpCode, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { RETRY_AFTER_HEADER } from '../common/errors/api-error-response.decorator.js';
import { type AnswerDeadline, Deadline } from '../common/http/request-deadlines.js';
import { ApiOAuthErrorResponse, ApiOAuthUnavailableResponse, NO_STORE_HEADERS } from '../oauth/api-oauth-error-response.decorator.js';
import { NoStore } from '../oauth/no-store.decorator.js';
import { OAuthExceptionFilter } from '../oauth/oauth-exception.filter.js';
import { HelperConfigDto, NoCodeDto, PolledCodeDto } from './dto/helper-config.dto.js';
import { HelperService, NO_CODE } from './helper.service.js';

@ApiTags('device authorization helper')
@Controller('external/oauth2helper')
@UseFilters(OAuthExceptionFilter)
export class HelperController {
  constructor(private readonly helper: HelperService) {}

  @Post('config/:client_id')
  @HttpCode(200)
  @NoStore()
  @ApiOperation({ summary: 'Helper configuration: where to send the user, where to poll for the code, where to exchange it' })
  @ApiParam({ name: 'client_id', description: 'a registered, enabled client with the authorization_code grant' })
  @ApiQuery({ name: 'redirect_url', required: false, description: "the device's own callback; must match a registered pattern. Without it the device polls code_url" })
  @ApiQuery({ name: 'code_challenge', required: false, description: 'RFC 7636 S256 challenge (43 base64url characters); required for a public client' })
  @ApiQuery({ name: 'code_challenge_method', required: false, enum: ['S256'], description: 'required with code_challenge' })
  @ApiOkResponse({ type: HelperConfigDto, headers: NO_STORE_HEADERS })
  @ApiOAuthErrorResponse(404, '`invalid_client`: unknown or disabled client')
  @ApiOAuthErrorResponse(
    400,
    '`invalid_request`: redirect_url not registered for the client or malformed, PKCE parameters malformed (a method other than S256, a method without a challenge) or missing for a public client, a repeated parameter or a NUL character; `unauthorized_client`: the client is not registered for authorization_code',
  )
  @ApiOAuthUnavailableResponse()
  config(@Param('client_id') clientId: string, @Query() query: Record<string, unknown>) {
    return this.helper.config(clientId, query);
  }

  @Get('code/get/:client_id')
  @NoStore()
  @ApiOperation({ summary: 'Poll for the authorization code of a sign-in link (state); 200 exactly once, 404 until then' })
  @ApiParam({ name: 'client_id', description: 'the client the sign-in link was issued to' })
  @ApiQuery({ name: 'state', required: true, description: 'the state of code_url' })
  @ApiOkResponse({ type: PolledCodeDto, headers: NO_STORE_HEADERS })
  @ApiResponse({ status: 404, type: NoCodeDto, headers: NO_STORE_HEADERS, description: 'no code ready (not signed in yet), already collected, or an unknown or disabled client' })
  @ApiOAuthErrorResponse(400, '`invalid_request`: missing, forged or expired state, or one issued to another client')
  @ApiOAuthErrorResponse(429, '`slow_down`: polled sooner than CODE_POLL_MIN_INTERVAL after the previous poll of this state (never the first poll)', RETRY_AFTER_HEADER)
  @ApiOAuthUnavailableResponse()
  async poll(
    @Param('client_id') clientId: string,
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Deadline() deadline: AnswerDeadline,
  ) {
    const code = await this.helper.poll(clientId, query, (seconds) => reply.header('Retry-After', String(seconds)), deadline);
    if (code !== null) return { code };
    void reply.status(404);
    return NO_CODE;
  }
}
