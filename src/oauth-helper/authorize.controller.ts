import { Body, Controller, Get, Post, Query, Req, Res } from '@nestjs/common';
import { ApiConsumes, ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomToken } from '../common/crypto/opaque-token.js';
import { STYLE_HASH } from './login-page.js';
import { type AuthorizeOutcome, LoginService } from './login.service.js';

/**
 * The CSRF cookie. Over https it is a `__Host-` cookie (Secure, Path=/, no Domain), which a
 * sibling subdomain or a plain-http page cannot set or overwrite (RFC 6265bis §4.1.3.2). Over plain
 * http (local development) browsers refuse Secure cookies, so it keeps a plain name scoped to the page.
 */
const csrfCookie = (request: FastifyRequest) =>
  request.protocol === 'https'
    ? { name: '__Host-vc_csrf', path: '/', secure: true }
    : { name: 'vc_csrf', path: '/sso/authorize', secure: false };

@ApiTags('device authorization helper')
@Controller('sso/authorize')
export class AuthorizeController {
  constructor(private readonly login: LoginService) {}

  @Get()
  @ApiOperation({ summary: 'Login page of the helper flow (HTML); 400 page for an invalid state or client, never a redirect' })
  @ApiOkResponse({ description: 'text/html login form' })
  async show(@Query() query: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const csrfToken = request.cookies[csrfCookie(request).name] || randomToken(32);
    send(request, reply, await this.login.show(query, csrfToken), csrfToken);
  }

  @Post()
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiOperation({ summary: 'Submit the login form: 302 to the device with code and state, or a "return to your device" page' })
  @ApiTooManyRequestsResponse({ description: 'the login page again: too many failed sign-ins for this username from this address (or overall); `Retry-After` says when to try again' })
  @ApiServiceUnavailableResponse({ description: 'the login page again: every password check slot is busy; `Retry-After: 1`' })
  async submit(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    // A failed attempt gets a fresh token: the form is re-rendered with it and the cookie renewed.
    const fresh = randomToken(32);
    send(request, reply, await this.login.submit(body, { cookie: request.cookies[csrfCookie(request).name], fresh }, request.ip), fresh);
  }
}

function send(request: FastifyRequest, reply: FastifyReply, outcome: AuthorizeOutcome, csrfToken: string) {
  void reply.header('Cache-Control', 'no-store').header('Referrer-Policy', 'no-referrer');
  if (outcome.kind === 'redirect') {
    void reply.redirect(outcome.location, 302);
    return;
  }
  if (outcome.retryAfter !== undefined) void reply.header('Retry-After', String(outcome.retryAfter));
  // Chrome applies form-action to the redirect that follows the POST, so the device's origin is allowed too.
  const formAction = ["'self'", outcome.redirectOrigin].filter(Boolean).join(' ');
  const cookie = csrfCookie(request);
  void reply
    .setCookie(cookie.name, csrfToken, { path: cookie.path, secure: cookie.secure, httpOnly: true, sameSite: 'strict' })
    .header(
      'Content-Security-Policy',
      `default-src 'none'; style-src ${STYLE_HASH}; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .header('X-Frame-Options', 'DENY')
    .header('X-Content-Type-Options', 'nosniff')
    .type('text/html; charset=utf-8')
    .status(outcome.status)
    .send(outcome.html);
}
