import { Body, Controller, Get, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RETRY_AFTER_HEADER } from '../common/errors/api-error-response.decorator.js';
import { ApiHtmlResponse } from '../common/html/api-html-response.decorator.js';
import { bindBrowser, browserBinding } from '../identity-providers/sign-in/upstream-browser.js';
import { requesterOf } from '../common/http/requester.js';
import { csrfCookieValue, newCsrfToken, pageCsrfToken, sendHtmlPage } from '../common/html/html-reply.js';
import { LoginFormDto } from './dto/login-form.dto.js';
import type { LoginBrowser } from './login-browser.js';
import { LoginService } from './login.service.js';
import type { AuthorizeOutcome } from './sign-in-links.service.js';
import { Env } from '../config/env.js';
import { sessionCookie, setSessionCookie } from '../sessions/session-cookie.js';

const PAGE_PATH = '/sso/authorize';

const REDIRECT_HEADERS = {
  Location: { description: "the device's redirect URL with `code` and `state`, or the identity provider's authorization URL", schema: { type: 'string' } },
  'Cache-Control': { description: '`no-store`', schema: { type: 'string' } },
  'Referrer-Policy': { description: '`no-referrer`', schema: { type: 'string' } },
};

@ApiTags('device authorization helper')
@Controller('sso/authorize')
export class AuthorizeController {
  constructor(
    private readonly login: LoginService,
    private readonly env: Env,
  ) {}

  /** The browser's cookies as the login page reads and sets them. */
  private browserOf(request: FastifyRequest, reply: FastifyReply): LoginBrowser {
    return {
      bind: () => bindBrowser(request, reply),
      binding: browserBinding(request),
      session: sessionCookie(request),
      startSession: (secret) => setSessionCookie(request, reply, secret, this.env.SESSION_TTL),
    };
  }

  @Get()
  @ApiOperation({
    summary:
      "Login page (HTML) of the helper's sign-in link and of the standard authorization request (RFC 6749 §4.1, OpenID Connect Core §3.1.2: a query with redirect_uri): a button per identity provider of the client and the login form when it signs in locally; a client whose only way in is one identity provider goes straight there (302). Within a browser session a standard request is answered with its code at once (unless prompt=login, prompt=consent or max_age asks otherwise), and the helper's link asks \"Continue as USER\". 400 page for an invalid link, client or redirect_uri, never a redirect to them",
  })
  @ApiQuery({ name: 'response_type', enum: ['code'], required: false, description: 'as in authorize_url; for a standard request, required (its absence goes back to the client as invalid_request)' })
  @ApiQuery({ name: 'client_id', description: 'as in authorize_url, or the standard request\'s client' })
  @ApiQuery({ name: 'state', required: false, description: "as in authorize_url: the sign-in link issued by the helper configuration route; for a standard request, the client's own, returned as sent" })
  @ApiQuery({ name: 'redirect_uri', required: false, description: 'a standard request: one the client registered, exactly (a loopback pattern allows any port)' })
  @ApiQuery({ name: 'code_challenge', required: false, description: 'a standard request: required, PKCE with code_challenge_method=S256' })
  @ApiQuery({ name: 'code_challenge_method', enum: ['S256'], required: false })
  @ApiQuery({ name: 'scope', required: false, description: 'a standard request: openid, profile, email, offline_access and the client\'s own scopes; others are ignored' })
  @ApiQuery({ name: 'nonce', required: false, description: 'a standard request: returned in the ID token' })
  @ApiQuery({ name: 'prompt', required: false, description: 'a standard request: none, login, consent or select_account' })
  @ApiQuery({ name: 'max_age', required: false, description: 'a standard request: seconds a session\'s sign-in may be old' })
  @ApiQuery({ name: 'login_hint', required: false, description: 'a standard request: fills the username' })
  @ApiHtmlResponse(200, 'the login form naming the client and, with a redirect_url, the host the code goes to; or "Continue as USER" within a browser session')
  @ApiResponse({
    status: 302,
    description:
      "to the client's only identity provider (authorization code flow with PKCE; sets the browser's `vc_upstream` cookie); or, for a standard request, to its redirect_uri with `code`, `state` and `iss` (a session's single sign-on) or with `error`, `error_description`, `state` and `iss`",
    headers: REDIRECT_HEADERS,
  })
  @ApiHtmlResponse(400, 'error page naming its cause: a malformed link, an unsupported response_type, an unknown or a disabled client, a state that is expired, already used, or missing, changed or another client\'s; for a standard request an unknown or disabled client or a redirect_uri the client did not register')
  @ApiHtmlResponse(503, 'error page: the identity provider cannot be reached, or the database is away or busy, or the request outlived REQUEST_TIMEOUT_MS (`Retry-After`)', { headers: RETRY_AFTER_HEADER })
  async show(@Query() query: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const csrfToken = pageCsrfToken(request, PAGE_PATH);
    send(request, reply, await this.login.show(query, csrfToken, this.browserOf(request, reply)), csrfToken);
  }

  @Post()
  @HttpCode(200)
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: LoginFormDto })
  @ApiOperation({
    summary:
      'Submit the login form: 302 to the device with code and state, or a "return to your device" page; with `idp` (a provider button), 302 to that identity provider; with `confirmation` and `decision` (the "Continue to CLIENT?" page after a sign-in there), the same as a password sign-in, or for `cancel` as a cancellation at the provider',
  })
  @ApiHtmlResponse(200, '"You\'re signed in", naming the client and the account (the device polls for its code), or the login form again saying "Wrong username or password."')
  @ApiResponse({ status: 302, description: "to the device's redirect URL with `code` and `state` added; or, for a provider button, to that identity provider", headers: REDIRECT_HEADERS })
  @ApiHtmlResponse(400, 'error page: the sign-in link is invalid, expired or already used (never a redirect); a confirmation that is unknown, used, from another browser, or with another decision; or the login form again when username or password is empty')
  @ApiHtmlResponse(403, 'the login form again: the CSRF token is missing or does not match its cookie; "Your account is disabled" for a confirmation whose brokered user was disabled since')
  @ApiHtmlResponse(429, 'the login form again: too many failed sign-ins for this username from this address, for this username, or from this address', { headers: RETRY_AFTER_HEADER })
  @ApiHtmlResponse(503, 'the login form again when every password check slot is busy (`Retry-After: 1`); an error page when the database is away or busy (`Retry-After`)', { headers: RETRY_AFTER_HEADER })
  async submit(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    // A failed attempt gets a fresh token: the form is re-rendered with it and the cookie renewed.
    const fresh = newCsrfToken();
    const outcome = await this.login.submit(body, { cookie: csrfCookieValue(request, PAGE_PATH), fresh }, requesterOf(request), this.browserOf(request, reply));
    send(request, reply, outcome, fresh);
  }
}

function send(request: FastifyRequest, reply: FastifyReply, outcome: AuthorizeOutcome, csrfToken: string) {
  if (outcome.kind === 'redirect') {
    void reply.header('Cache-Control', 'no-store').header('Referrer-Policy', 'no-referrer').redirect(outcome.location, 302);
    return;
  }
  sendHtmlPage(request, reply, outcome, { token: csrfToken, pagePath: PAGE_PATH });
}
