import { Body, Controller, Get, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RETRY_AFTER_HEADER } from '../common/errors/api-error-response.decorator.js';
import { ApiHtmlResponse } from '../common/html/api-html-response.decorator.js';
import { bindBrowser } from '../identity-providers/sign-in/upstream-browser.js';
import { requesterOf } from '../common/http/requester.js';
import { csrfCookieValue, newCsrfToken, pageCsrfToken, sendHtmlPage } from '../common/html/html-reply.js';
import { sessionCookie, setSessionCookie } from '../sessions/session-cookie.js';
import { type DevicePage, DeviceVerificationService } from './device-verification.service.js';
import { DeviceVerificationFormDto } from './dto/device-verification-form.dto.js';

const PAGE_PATH = '/sso/device';

@ApiTags('device flow (RFC 8628)')
@Controller('sso/device')
export class DeviceVerificationController {
  constructor(private readonly verification: DeviceVerificationService) {}

  @Get()
  @ApiOperation({ summary: 'Verification page (HTML): the code form, pre-filled from `?user_code=` (verification_uri_complete)' })
  @ApiQuery({ name: 'user_code', required: false, description: 'pre-fills the code (at most 64 characters; the user still confirms it)' })
  @ApiHtmlResponse(200, 'the code form')
  // It reads the identity providers (its form may lead to one): the database must answer.
  @ApiHtmlResponse(503, 'error page: the database is away or busy, or the request outlived REQUEST_TIMEOUT_MS', { headers: RETRY_AFTER_HEADER })
  async show(@Query() query: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const csrfToken = pageCsrfToken(request, PAGE_PATH);
    sendDevicePage(request, reply, await this.verification.show(query, csrfToken), csrfToken);
  }

  @Post()
  @HttpCode(200)
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: DeviceVerificationFormDto })
  @ApiOperation({
    summary:
      'One step of the verification page: `user_code` → the sign-in form, or within a browser session "Continue as USER" and "Use another account" (never an approval by itself); with `username`, `password` (which begin a browser session, setting its cookie) or `session=continue` → the approval form naming the client, the account and the scopes (by the descriptions an operator set); `session=another` → the sign-in form; with `decision` (approve or deny) → done, naming the client and the account. A code not accepted: the code form again, 400, saying why',
  })
  @ApiHtmlResponse(200, 'the next step: the sign-in form, "Continue as USER", the approval form (after a sign-in, with the session cookie `vc_session`, `__Host-vc_session` over https), "Device connected" or "Request denied"; or the sign-in form again saying "Wrong username or password."')
  @ApiHtmlResponse(
    400,
    'the code form again, saying why: the code is missing, cannot be a code (its length or letters), is unknown, expired, already approved or denied, cancelled (its account disabled or signed out), or for a disabled or removed application, or the form is malformed; the sign-in form again when username or password is empty, the approval form lacks its decision or one-time value, or "Continue as USER" was pressed after the session ended',
  )
  @ApiResponse({
    status: 303,
    description: "to an identity provider: the provider button pressed, or the client's only way in after the code (authorization code flow with PKCE); sets the browser's `vc_upstream` cookie",
    headers: { Location: { description: "the identity provider's authorization URL", schema: { type: 'string' } } },
  })
  @ApiHtmlResponse(403, "the code form again when the CSRF token is missing or does not match its cookie; the sign-in form again when the approval form is not the latest sign-in's")
  @ApiHtmlResponse(429, 'too many wrong codes from this address (the code form), or too many failed sign-ins (the sign-in form)', { headers: RETRY_AFTER_HEADER })
  @ApiHtmlResponse(503, 'the sign-in form again when every password check slot is busy (`Retry-After: 1`); an error page when the identity provider cannot be reached or the database is away or busy', { headers: RETRY_AFTER_HEADER })
  async submit(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    // Every answer carries a fresh token: the next form is rendered with it and the cookie renewed.
    const fresh = newCsrfToken();
    const browser = { bind: () => bindBrowser(request, reply), session: sessionCookie(request) };
    const outcome = await this.verification.submit(body, { cookie: csrfCookieValue(request, PAGE_PATH), fresh }, requesterOf(request), browser);
    if ('location' in outcome) {
      void reply.header('Cache-Control', 'no-store').header('Referrer-Policy', 'no-referrer').redirect(outcome.location, 303);
      return;
    }
    sendDevicePage(request, reply, outcome, fresh);
  }
}

/**
 * A page of the verification flow, with its CSRF cookie, and the session cookie when a sign-in
 * on it began a browser session (also from the identity provider callback, which shows the
 * approval form after a brokered sign-in).
 */
export function sendDevicePage(request: FastifyRequest, reply: FastifyReply, page: DevicePage, csrfToken: string): void {
  if (page.startedSession) setSessionCookie(request, reply, page.startedSession.secret, page.startedSession.lifetimeSeconds);
  sendHtmlPage(request, reply, page, { token: csrfToken, pagePath: PAGE_PATH });
}
