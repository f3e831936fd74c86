import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomToken } from '../crypto/opaque-token.js';
import { STYLE_HASH } from './page-layout.js';

/** A server-rendered page as a controller answers it. */
export interface HtmlPage {
  status: number;
  html: string;
  /** Seconds, for a 429 or 503. */
  retryAfter?: number;
  /** Other origins the page's forms lead to (a device's redirect URL, identity providers), allowed by form-action. */
  formTargets?: string[];
}

/**
 * The CSRF cookie of a page with a form (double submit). Over https (`overHttps`) it is a `__Host-` cookie
 * (Secure, Path=/, no Domain), which a sibling subdomain or a plain-http page cannot set or
 * overwrite (RFC 6265bis §4.1.3.2). Over plain http (local development) browsers refuse Secure
 * cookies, so it keeps a plain name scoped to the page.
 */
export const csrfCookie = (request: FastifyRequest, pagePath: string) =>
  request.overHttps ? { name: '__Host-vc_csrf', path: '/', secure: true } : { name: 'vc_csrf', path: pagePath, secure: false };

/** A CSRF token as the service issues it: 32 random bytes, base64url. */
const CSRF_TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** A fresh CSRF token. */
export const newCsrfToken = () => randomToken(32);

/** The CSRF token the request's cookie carries, if any (compared with the form's). */
export const csrfCookieValue = (request: FastifyRequest, pagePath: string): string | undefined => request.cookies[csrfCookie(request, pagePath).name];

/**
 * The token for a page shown afresh: the cookie's, so several open tabs keep working, if it is
 * one the service could have issued (it is rendered into the form, so a planted odd value must
 * not get that far); otherwise a new one.
 */
export function pageCsrfToken(request: FastifyRequest, pagePath: string): string {
  const value = csrfCookieValue(request, pagePath);
  return value !== undefined && CSRF_TOKEN.test(value) ? value : newCsrfToken();
}

/** Whether the form's token is the cookie's, compared in constant time. */
export function csrfMatches(cookie: string | undefined, submitted: string | undefined): boolean {
  if (!cookie || !submitted) return false;
  const [a, b] = [Buffer.from(cookie), Buffer.from(submitted)];
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Why a form's token was refused, for the user: no cookie came (cookies blocked), or another tab
 * of the page was used since (every answer renews the cookie, so an older tab's form is stale).
 */
export const csrfRefusal = (cookie: string | undefined) =>
  cookie ? 'This form is out of date: the page was used in another tab since.' : "Your browser did not send this page's cookie: allow cookies for this site.";

/**
 * Sends a page, with its CSRF cookie when given, and the headers every page of the service
 * carries: never cached, no referrer, no framing (`frame-ancestors 'none'`), no script, images
 * (the portal's logo) and forms only from and to itself. (A form without the cookie has a one-time value of its own for a token.)
 */
export function sendHtmlPage(request: FastifyRequest, reply: FastifyReply, page: HtmlPage, csrf?: { token: string; pagePath: string }): void {
  if (page.retryAfter !== undefined) void reply.header('Retry-After', String(page.retryAfter));
  // Chrome applies form-action to the redirect that follows a POST, so a device's origin is allowed too.
  const formAction = ["'self'", ...new Set(page.formTargets ?? [])].join(' ');
  if (csrf) {
    const cookie = csrfCookie(request, csrf.pagePath);
    void reply.setCookie(cookie.name, csrf.token, { path: cookie.path, secure: cookie.secure, httpOnly: true, sameSite: 'strict' });
  }
  sendPage(reply, page.status, page.html, formAction);
}

/** Sends a page without a form (no CSRF cookie), with the same headers. */
export function sendPlainPage(reply: FastifyReply, status: number, html: string): void {
  sendPage(reply, status, html, "'none'");
}

function sendPage(reply: FastifyReply, status: number, html: string, formAction: string): void {
  void reply
    .header('Cache-Control', 'no-store')
    .header('Referrer-Policy', 'no-referrer')
    .header('Content-Security-Policy', `default-src 'none'; style-src ${STYLE_HASH}; img-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`)
    .header('X-Frame-Options', 'DENY')
    .header('X-Content-Type-Options', 'nosniff')
    .type('text/html; charset=utf-8')
    .status(status)
    .send(html);
}
