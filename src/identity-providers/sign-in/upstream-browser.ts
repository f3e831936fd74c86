import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomToken } from '../../common/crypto/opaque-token.js';

/**
 * The cookie that binds a sign-in at a provider to the browser that started it: a random value
 * whose hash is stored with the sign-in, checked at the callback. SameSite=Lax, as the provider
 * sends the browser back by a top-level GET from another site (Strict would not be sent). Over
 * https (`overHttps`) a `__Host-` cookie; over plain http (development) a plain name. Its path is `/` either
 * way: the pages that start a sign-in must see it too, or a second tab would replace it.
 */
const cookieOf = (request: FastifyRequest) =>
  request.overHttps ? { name: '__Host-vc_upstream', path: '/', secure: true } : { name: 'vc_upstream', path: '/', secure: false };

const BINDING = /^[A-Za-z0-9_-]{43}$/;

/** The browser's binding, if it has one the service could have issued. */
export function browserBinding(request: FastifyRequest): string | undefined {
  const value = request.cookies[cookieOf(request).name];
  return value !== undefined && BINDING.test(value) ? value : undefined;
}

/** The browser's binding, issued (and set on the reply) when it has none; several tabs share one. */
export function bindBrowser(request: FastifyRequest, reply: FastifyReply): string {
  const existing = browserBinding(request);
  if (existing) return existing;
  const value = randomToken(32);
  const cookie = cookieOf(request);
  void reply.setCookie(cookie.name, value, { path: cookie.path, secure: cookie.secure, httpOnly: true, sameSite: 'lax' });
  return value;
}
