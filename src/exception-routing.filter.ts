import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { HttpExceptionFilter } from './common/errors/http-exception.filter.js';
import { OAuthExceptionFilter } from './token/oauth-exception.filter.js';

/** Paths whose every error, even one raised while reading the body, is an RFC 6749 §5.2 error. */
const OAUTH_PATHS = ['/sso/token', '/sso/device_authorization', '/sso/introspect', '/sso/revoke', '/public/api/oauth2/token', '/external/oauth2helper/'];

/**
 * The global filter. Controllers choose their format with @UseFilters, but errors from Fastify's
 * body parsing (malformed JSON, unsupported media type, too large) happen before any controller
 * runs, so the path decides here.
 */
@Catch()
export class ExceptionRoutingFilter implements ExceptionFilter {
  private readonly oauth = new OAuthExceptionFilter();
  private readonly http = new HttpExceptionFilter();

  catch(exception: unknown, host: ArgumentsHost) {
    const path = host.switchToHttp().getRequest<FastifyRequest>().url.split('?')[0];
    const filter = OAUTH_PATHS.some((prefix) => path === prefix || (prefix.endsWith('/') && path.startsWith(prefix))) ? this.oauth : this.http;
    filter.catch(exception, host);
  }
}
