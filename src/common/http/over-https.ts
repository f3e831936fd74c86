import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** Whether the browser reached the service over https (see decorateOverHttps). */
    readonly overHttps: boolean;
  }
}

/**
 * Whether a request reached the service over https, which decides its cookies' Secure flag and
 * `__Host-` names. The request says so (TLS here, or the X-Forwarded-Proto of a proxy TRUST_PROXY
 * names). And when the service's public address is https, browsers only ever come over https:
 * behind a TLS proxy that TRUST_PROXY does not name, the cookies are still Secure.
 */
export function decorateOverHttps(fastify: FastifyInstance, publicUrl: string): void {
  const publicOverHttps = new URL(publicUrl).protocol === 'https:';
  fastify.decorateRequest('overHttps', {
    getter(this: FastifyRequest) {
      return publicOverHttps || this.protocol === 'https';
    },
  });
}
