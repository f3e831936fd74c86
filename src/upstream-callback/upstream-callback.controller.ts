import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RETRY_AFTER_HEADER } from '../common/errors/api-error-response.decorator.js';
import { ApiHtmlResponse } from '../common/html/api-html-response.decorator.js';
import { newCsrfToken, sendHtmlPage, sendPlainPage } from '../common/html/html-reply.js';
import { type AnswerDeadline, Deadline } from '../common/http/request-deadlines.js';
import { requesterOf } from '../common/http/requester.js';
import { sendDevicePage } from '../device-flow/device-verification.controller.js';
import { browserBinding } from '../identity-providers/sign-in/upstream-browser.js';
import { UpstreamCallbackService } from './upstream-callback.service.js';

@ApiTags('identity providers')
@Controller('sso/callback')
export class UpstreamCallbackController {
  constructor(private readonly callback: UpstreamCallbackService) {}

  @Get(':name')
  @ApiOperation({
    summary:
      "Where an identity provider sends the browser back (authorization code flow): the sign-in is taken once, from the browser that started it, the code exchanged and the ID token checked; then the helper link's \"Continue to CLIENT?\" page or the device approval form follows",
  })
  @ApiParam({ name: 'name', description: 'the identity provider, as registered with idp:create' })
  @ApiResponse({ status: 302, description: "to the device's redirect URL with `error=access_denied` and `state`, when the user cancelled at the provider" })
  @ApiHtmlResponse(200, '"Continue to CLIENT?" (the helper link: nothing reaches the device before its Continue, posted to /sso/authorize), the device approval form, or "Sign-in cancelled"')
  @ApiHtmlResponse(400, 'error page saying what failed: an unknown provider, a state not started here, already used, expired or from another browser, or a check of the answer (ID token signature, iss, aud, azp, exp, iat, nonce, RFC 9207 iss)')
  @ApiHtmlResponse(403, 'error page: the brokered user has been disabled here')
  @ApiHtmlResponse(503, 'error page: the provider could not be reached in IDP_HTTP_TIMEOUT_MS (nor before REQUEST_TIMEOUT_MS) or answered 5xx, or the database is away or busy', { headers: RETRY_AFTER_HEADER })
  async finish(@Param('name') name: string, @Req() request: FastifyRequest, @Res() reply: FastifyReply, @Deadline() deadline: AnswerDeadline) {
    const query = new URLSearchParams(request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '');
    const csrfToken = newCsrfToken();
    const answer = await this.callback.answer(name, query, browserBinding(request), csrfToken, requesterOf(request), deadline);
    if (answer.kind === 'redirect') {
      void reply.header('Cache-Control', 'no-store').header('Referrer-Policy', 'no-referrer').redirect(answer.location, 302);
    } else if (answer.form === 'device') {
      sendDevicePage(request, reply, answer.page, csrfToken);
    } else if (answer.form === 'confirmation') {
      sendHtmlPage(request, reply, answer.page);
    } else {
      if (answer.page.retryAfter !== undefined) void reply.header('Retry-After', String(answer.page.retryAfter));
      sendPlainPage(reply, answer.page.status, answer.page.html);
    }
  }
}
