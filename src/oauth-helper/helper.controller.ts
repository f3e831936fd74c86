import { Controller, Get, HttpCode, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { NoStore } from '../token/no-store.decorator.js';
import { OAuthExceptionFilter } from '../token/oauth-exception.filter.js';
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
  @ApiQuery({ name: 'redirect_url', required: false, description: "the device's own callback; must match a registered pattern" })
  @ApiQuery({ name: 'code_challenge', required: false, description: 'RFC 7636 S256 challenge' })
  @ApiQuery({ name: 'code_challenge_method', required: false, enum: ['S256'] })
  @ApiOkResponse({ description: '`{authorize_url, code_url, accesstoken_request_url, interval, expires_in}`: interval is the minimum seconds between polls of code_url, expires_in the lifetime of the sign-in link' })
  @ApiNotFoundResponse({ description: 'unknown or disabled client: `{error: "invalid_client"}`' })
  @ApiBadRequestResponse({ description: 'redirect_url not allowed or PKCE parameters malformed: `{error: "invalid_request"}`' })
  config(@Param('client_id') clientId: string, @Query() query: Record<string, unknown>) {
    return this.helper.config(clientId, query);
  }

  @Get('code/get/:client_id')
  @NoStore()
  @ApiOperation({ summary: 'Poll for the authorization code of a sign-in link (state); 200 exactly once, 404 until then' })
  @ApiQuery({ name: 'state', required: true })
  @ApiOkResponse({ description: '`{code}`' })
  @ApiNotFoundResponse({ description: 'no code ready, unknown client, or already collected' })
  @ApiBadRequestResponse({ description: 'missing, forged or expired state, or one of another client' })
  @ApiTooManyRequestsResponse({ description: 'polled faster than the minimum interval; see Retry-After' })
  async poll(@Param('client_id') clientId: string, @Query() query: Record<string, unknown>, @Res({ passthrough: true }) reply: FastifyReply) {
    const code = await this.helper.poll(clientId, query, (seconds) => reply.header('Retry-After', String(seconds)));
    if (code !== null) return { code };
    void reply.status(404);
    return NO_CODE;
  }
}
