import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The browser session's cookie: a random value whose hash names the session. HttpOnly, and
 * SameSite=Lax, as a client sends the browser here by a top-level navigation from its own site
 * (Strict would hide the session from every standard request). Over https (`overHttps`) a `__Host-` cookie
 * (Secure, Path=/, no Domain); over plain http (development) a plain name.
 */
const cookieOf = (request: FastifyRequest) =>
  request.overHttps ? { name: '__Host-vc_session', secure: true } : { name: 'vc_session', secure: false };

const VALUE = /^[A-Za-z0-9_-]{43}$/;

/** The session cookie's value, when it is one the service could have issued. */
export function sessionCookie(request: FastifyRequest): string | undefined {
  const value = request.cookies[cookieOf(request).name];
  return value !== undefined && VALUE.test(value) ? value : undefined;
}

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, value: string, lifetimeSeconds: number): void {
  const cookie = cookieOf(request);
  void reply.setCookie(cookie.name, value, { path: '/', secure: cookie.secure, httpOnly: true, sameSite: 'lax', maxAge: lifetimeSeconds });
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  const cookie = cookieOf(request);
  void reply.clearCookie(cookie.name, { path: '/', secure: cookie.secure, httpOnly: true, sameSite: 'lax' });
}
