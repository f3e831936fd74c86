import { type ArgumentsHost, Catch, type ExceptionFilter, MethodNotAllowedException, NotFoundException } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpExceptionFilter } from './common/errors/http-exception.filter.js';
import { sendMissingPage, wantsPage } from './common/html/missing-page.js';
import { isPagePath, PageExceptionFilter } from './common/html/page-exception.filter.js';
import { allowedMethods } from './common/http/allowed-methods.js';
import { OAuthError } from './oauth/oauth-error.js';
import { OAuthExceptionFilter } from './oauth/oauth-exception.filter.js';

/** Paths whose every error, even one raised while reading the body, is an RFC 6749 §5.2 error. */
const OAUTH_PATHS = ['/sso/token', '/sso/device_authorization', '/sso/introspect', '/sso/revoke', '/sso/userinfo', '/sso/register', '/sso/register/', '/public/api/oauth2/token', '/external/oauth2helper/'];

/**
 * The global filter. Controllers choose their format with @UseFilters, but errors from Fastify's
 * body parsing (malformed JSON, unsupported media type, too large) and requests no route took
 * happen before any controller runs, so the path decides here: the OAuth endpoints answer RFC 6749
 * errors, the pages an HTML page, every other route the service's JSON. A request no route took
 * is a 405 with `Allow` when its path has routes for other methods, and a browser asking for a
 * page that does not exist gets one that says so.
 */
@Catch()
export class ExceptionRoutingFilter implements ExceptionFilter {
  private readonly oauth = new OAuthExceptionFilter();
  private readonly http = new HttpExceptionFilter();
  private readonly page = new PageExceptionFilter();

  catch(exception: unknown, host: ArgumentsHost) {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const path = request.url.split('?')[0];
    const oauthPath = OAUTH_PATHS.some((prefix) => path === prefix || (prefix.endsWith('/') && path.startsWith(prefix)));
    const pagePath = !oauthPath && isPagePath(path);
    if (exception instanceof NotFoundException && request.routeOptions.url === undefined) {
      const allow = allowedMethods(request);
      if (allow.length > 0) {
        host.switchToHttp().getResponse<FastifyReply>().header('Allow', allow.join(', '));
        const use = `use ${allow.join(' or ')}`;
        exception = oauthPath
          ? new OAuthError('invalid_request', `method not allowed at this endpoint: ${use}`, { status: 405 })
          : new MethodNotAllowedException(`${request.method} is not allowed at ${path}: ${use}`);
      } else if (pagePath || (!oauthPath && wantsPage(request))) {
        return sendMissingPage(host.switchToHttp().getResponse<FastifyReply>(), path);
      }
    }
    (oauthPath ? this.oauth : pagePath ? this.page : this.http).catch(exception, host);
  }
}
