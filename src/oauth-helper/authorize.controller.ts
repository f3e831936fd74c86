import { Body, Controller, Get, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConsumes,
  ApiForbiddenResponse,
  ApiFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { csrfCookieValue, newCsrfToken, pageCsrfToken, sendHtmlPage } from '../common/html/html-reply.js';
import { type AuthorizeOutcome, LoginService } from './login.service.js';

const PAGE_PATH = '/sso/authorize';

@ApiTags('device authorization helper')
@Controller('sso/authorize')
export class AuthorizeController {
  constructor(private readonly login: LoginService) {}

  @Get()
  @ApiOperation({ summary: 'Login page of the helper flow (HTML); 400 page for an invalid state or client, never a redirect' })
  @ApiOkResponse({ description: 'text/html login form naming the client and, with a redirect_url, the host the code goes to' })
  async show(@Query() query: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const csrfToken = pageCsrfToken(request, PAGE_PATH);
    send(request, reply, await this.login.show(query, csrfToken), csrfToken);
  }

  @Post()
  @HttpCode(200)
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiOperation({ summary: 'Submit the login form: 302 to the device with code and state, or a "return to your device" page' })
  @ApiOkResponse({ description: 'text/html: "return to your device", or the login form again with a message (wrong credentials)' })
  @ApiFoundResponse({ description: "to the device's redirect URL with `code` and `state`" })
  @ApiBadRequestResponse({ description: 'text/html error page: the sign-in link is invalid, expired or used; never a redirect' })
  @ApiForbiddenResponse({ description: 'the login form again: the CSRF token is missing or wrong' })
  @ApiTooManyRequestsResponse({ description: 'the login page again: too many failed sign-ins for this username from this address (or overall); `Retry-After` says when to try again' })
  @ApiServiceUnavailableResponse({ description: 'the login page again: every password check slot is busy; `Retry-After: 1`' })
  async submit(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    // A failed attempt gets a fresh token: the form is re-rendered with it and the cookie renewed.
    const fresh = newCsrfToken();
    send(request, reply, await this.login.submit(body, { cookie: csrfCookieValue(request, PAGE_PATH), fresh }, request.ip), fresh);
  }
}

function send(request: FastifyRequest, reply: FastifyReply, outcome: AuthorizeOutcome, csrfToken: string) {
  if (outcome.kind === 'redirect') {
    void reply.header('Cache-Control', 'no-store').header('Referrer-Policy', 'no-referrer').redirect(outcome.location, 302);
    return;
  }
  sendHtmlPage(request, reply, outcome, { token: csrfToken, pagePath: PAGE_PATH });
}
