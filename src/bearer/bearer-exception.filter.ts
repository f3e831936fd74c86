import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { BearerRejection } from './bearer-authenticator.service.js';
import { OAuthError } from '../oauth/oauth-error.js';
import { OAuthExceptionFilter } from '../oauth/oauth-exception.filter.js';

/**
 * Errors of a protected resource that answers in the OAuth format (userinfo, registration): a refused bearer
 * token gets its RFC 6750 §3 challenge in `WWW-Authenticate` and the same code in the body
 * (`invalid_token` when no token was sent, whose challenge carries no code, §3.1); everything
 * else is answered as at the token endpoint.
 */
@Catch()
export class BearerExceptionFilter implements ExceptionFilter {
  private readonly oauth = new OAuthExceptionFilter();

  catch(exception: unknown, host: ArgumentsHost) {
    if (exception instanceof HttpException && exception.cause instanceof BearerRejection) exception = exception.cause;
    if (exception instanceof BearerRejection) {
      host.switchToHttp().getResponse<FastifyReply>().header('WWW-Authenticate', exception.wwwAuthenticate);
      exception = new OAuthError(exception.error ?? 'invalid_token', exception.message, { status: exception.status });
    }
    this.oauth.catch(exception, host);
  }
}
