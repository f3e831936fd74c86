import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { logFailure } from '../common/errors/log-failure.js';
import { isTemporarilyUnavailable, RETRY_AFTER_S } from '../common/errors/temporarily-unavailable.js';
import { OAuthError, UNSUPPORTED_MEDIA_TYPE } from './oauth-error.js';

/** error_description of a request refused before its handler ran, by status. */
const UNREADABLE: Record<number, string> = {
  400: 'the request could not be read',
  404: 'no such endpoint',
  405: 'method not allowed at this endpoint',
  408: 'the request was not received in time',
  413: 'the request body is too large',
  414: 'the request URI is too long',
  415: UNSUPPORTED_MEDIA_TYPE,
  431: 'the request headers are too large',
};

/**
 * The OAuth endpoints' error format (RFC 6749 §5.2): `{ error, error_description }`, never
 * cached; invalid_client is a 401 with `WWW-Authenticate` when Basic was used; a database that is
 * away or busy is a 503 temporarily_unavailable with Retry-After; anything else unexpected is a
 * generic server_error whose details only reach the log.
 */
@Catch()
export class OAuthExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost) {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const error = this.toOAuthError(exception, request.url.startsWith('/sso/register'));
    logFailure(request, 'OAuth', error.status, exception, `${error.error}: ${error.description}`);
    if (error.basicChallenge) reply.header('WWW-Authenticate', 'Basic realm="voyage-connect", charset="UTF-8"');
    const retryAfter = error.retryAfter ?? (error.status === 503 ? RETRY_AFTER_S : undefined);
    if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
    void reply
      .status(error.status)
      .header('Cache-Control', 'no-store')
      .header('Pragma', 'no-cache')
      .send({ error: error.error, error_description: error.description });
  }

  /** `json`: the route reads JSON (registration), which a 415 names instead of a form. */
  private toOAuthError(exception: unknown, json: boolean): OAuthError {
    if (exception instanceof OAuthError) return exception;
    // Raised before the handler (no route, body too large, unsupported or malformed body): the
    // request itself is bad. Its status stays, so a client can tell a 413 from a 400.
    const status = exception instanceof HttpException ? exception.getStatus() : (exception as { statusCode?: number })?.statusCode;
    if (status === 415 && json) return new OAuthError('invalid_request', 'unsupported content type: send application/json', { status });
    if (status && status >= 400 && status < 500) return new OAuthError('invalid_request', UNREADABLE[status] ?? UNREADABLE[400], { status });
    // RFC 6749 §4.1.2.1's temporarily_unavailable, with 503 and Retry-After: the request was fine, the database was not.
    if (isTemporarilyUnavailable(exception)) return new OAuthError('temporarily_unavailable', 'the service is temporarily unavailable: try again shortly');
    return new OAuthError('server_error', 'the server could not complete the request');
  }
}
