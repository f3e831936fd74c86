import { Body, Controller, Get, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiHtmlResponse } from '../common/html/api-html-response.decorator.js';
import { csrfCookieValue, pageCsrfToken, sendHtmlPage, sendPlainPage } from '../common/html/html-reply.js';
import { clearSessionCookie, sessionCookie } from '../sessions/session-cookie.js';
import { LogoutFormDto } from './dto/logout-form.dto.js';
import { type LogoutAnswer, LogoutService } from './logout.service.js';

const PAGE_PATH = '/sso/logout';

@ApiTags('OpenID Connect')
@Controller('sso/logout')
export class LogoutController {
  constructor(private readonly logout: LogoutService) {}

  @Get()
  @ApiOperation({
    summary:
      "RP-Initiated Logout 1.0: ends the browser's session (at once for an id_token_hint of its user, else after the user confirms), then 302 to the registered post_logout_redirect_uri with state, or to a brokered user's identity provider, or a \"You're signed out\" page",
  })
  @ApiResponse({ status: 302, description: "to the client's registered post_logout_redirect_uri (with `state`), or to a brokered user's identity provider's end_session_endpoint, which sends the browser back to /sso/logout/done" })
  @ApiHtmlResponse(200, '"You\'re signed out", or "Sign out?" (a form, POST to /sso/logout) when no id_token_hint of the session\'s user came')
  @ApiHtmlResponse(400, 'error page, never a redirect: a malformed link, an id_token_hint the service did not issue, a client_id other than the hint\'s, or a post_logout_redirect_uri the client did not register')
  async show(@Query() query: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const csrfToken = pageCsrfToken(request, PAGE_PATH);
    send(request, reply, await this.logout.answer(query, sessionCookie(request), csrfToken), csrfToken);
  }

  @Get('done')
  @ApiOperation({
    summary:
      "Where a brokered user's identity provider sends the browser back after its own sign-out (its post_logout_redirect_uri): 302 on to the application's registered post_logout_redirect_uri with its state, or the \"You're signed out\" page",
  })
  @ApiResponse({ status: 302, description: "to the post_logout_redirect_uri the application gave /sso/logout (with its `state`), when `state` is the service's own, unexpired, and the address is still registered for the client" })
  @ApiHtmlResponse(200, '"You\'re signed out": no application address was asked, or `state` is missing, forged, changed or expired')
  async afterProvider(@Query() query: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    send(request, reply, await this.logout.afterProvider(query));
  }

  @Post()
  @HttpCode(200)
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: LogoutFormDto })
  @ApiOperation({ summary: 'The same as GET with the parameters in a form; with `csrf_token`, the "Sign out?" confirmation: the session ends' })
  @ApiResponse({ status: 302, description: 'as for GET' })
  @ApiHtmlResponse(200, 'as for GET')
  @ApiHtmlResponse(400, 'as for GET')
  @ApiHtmlResponse(403, 'the confirmation without its CSRF cookie, or with another tab\'s')
  async submit(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const csrfToken = pageCsrfToken(request, PAGE_PATH);
    const confirming = typeof body === 'object' && body !== null && 'csrf_token' in body;
    const answer = await this.logout.answer(body, sessionCookie(request), csrfToken, confirming ? { cookie: csrfCookieValue(request, PAGE_PATH) } : undefined);
    send(request, reply, answer, csrfToken);
  }
}

/** `csrfToken`: the page's, for an answer with a form (the "Sign out?" page). */
function send(request: FastifyRequest, reply: FastifyReply, answer: LogoutAnswer, csrfToken?: string): void {
  if (answer.endSession) clearSessionCookie(request, reply);
  if (answer.kind === 'redirect') {
    void reply.header('Cache-Control', 'no-store').header('Referrer-Policy', 'no-referrer').redirect(answer.location, 302);
  } else if (answer.form && csrfToken !== undefined) {
    sendHtmlPage(request, reply, answer.page, { token: csrfToken, pagePath: PAGE_PATH });
  } else {
    sendPlainPage(reply, answer.page.status, answer.page.html);
  }
}
