import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import { openFailure } from '../errors/http-exception.filter.js';
import { sendPlainPage } from './html-reply.js';
import { escapeHtml, pageLayout } from './page-layout.js';

/** The service's pages, where a person reads the answer in a browser. */
const PAGE_PATHS = new Set(['/', '/sso/authorize', '/sso/device', '/sso/logout', '/sso/logout/done']);
const PAGE_PREFIXES = ['/sso/callback/'];

/** Whether `path` (without its query) is one of the service's pages. */
export const isPagePath = (path: string) => PAGE_PATHS.has(path) || PAGE_PREFIXES.some((prefix) => path.startsWith(prefix));

/**
 * Whatever fails on a page (the database away, the request past its deadline, a body Fastify
 * could not read, a bug) is answered with a page that says what to do, never the service's JSON
 * and never a stack: the person reading it is at a browser, not a program. The page gives the
 * request's id, which the log line of the failure carries, for the operator.
 */
@Catch()
export class PageExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost) {
    const failure = openFailure(exception, host, 'PageExceptionFilter');
    if (failure && !failure.reply.sent) sendPlainPage(failure.reply, failure.status, failurePage(failure.status, failure.request.id));
  }
}

/** The page for a failure, by its status alone: what went wrong is for the log. */
function failurePage(status: number, requestId: string): string {
  const reference = `<p class="hint">Reference for the operator of this service: <span class="address">${escapeHtml(requestId)}</span></p>`;
  if (status === 503) {
    return pageLayout('Try again in a moment', `<h1>Try again in a moment</h1>\n<p>The service is busy or briefly unavailable. Wait a moment, then reload this page.</p>\n${reference}`);
  }
  if (status >= 500) {
    return pageLayout(
      'Something went wrong',
      `<h1>Something went wrong</h1>\n<p>The service could not finish this step. Reload the page to try again; if it keeps happening, tell the operator of this service.</p>\n${reference}`,
    );
  }
  return pageLayout(
    'This request does not work',
    `<h1>This request does not work</h1>\n<p>The service could not read what your browser sent. Go back and try again; if it keeps happening, start again from your device or application.</p>\n${reference}`,
  );
}
