import { Body, Controller, Get, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConsumes,
  ApiForbiddenResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { csrfCookieValue, newCsrfToken, pageCsrfToken, sendHtmlPage } from '../common/html/html-reply.js';
import { DeviceVerificationService } from './device-verification.service.js';

const PAGE_PATH = '/sso/device';

@ApiTags('device flow (RFC 8628)')
@Controller('sso/device')
export class DeviceVerificationController {
  constructor(private readonly verification: DeviceVerificationService) {}

  @Get()
  @ApiOperation({ summary: 'Verification page (HTML): the code form, pre-filled from `?user_code=` (verification_uri_complete)' })
  @ApiOkResponse({ description: 'text/html form with the input user_code' })
  show(@Query() query: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const csrfToken = pageCsrfToken(request, PAGE_PATH);
    sendHtmlPage(request, reply, this.verification.show(query, csrfToken), { token: csrfToken, pagePath: PAGE_PATH });
  }

  @Post()
  @HttpCode(200)
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiOperation({
    summary:
      'One step of the verification page: `user_code` → the sign-in form; with `username`, `password` → the approval form naming the client and scopes; with `decision` (approve or deny) → done. A wrong or expired code: the code form again, 400',
  })
  @ApiOkResponse({ description: 'text/html: the next step' })
  @ApiBadRequestResponse({ description: 'text/html: the code form again, the code is wrong or expired (or the form malformed)' })
  @ApiForbiddenResponse({ description: 'text/html: the CSRF token is missing or wrong, or the approval form is not the latest sign-in\'s' })
  @ApiTooManyRequestsResponse({ description: 'too many wrong codes from this address, or too many failed sign-ins; `Retry-After` says when to try again' })
  @ApiServiceUnavailableResponse({ description: 'the sign-in form again: every password check slot is busy; `Retry-After: 1`' })
  async submit(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    // Every answer carries a fresh token: the next form is rendered with it and the cookie renewed.
    const fresh = newCsrfToken();
    const outcome = await this.verification.submit(body, { cookie: csrfCookieValue(request, PAGE_PATH), fresh }, request.ip);
    sendHtmlPage(request, reply, outcome, { token: fresh, pagePath: PAGE_PATH });
  }
}
