import FindMyWay from 'find-my-way';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * Which methods an address has routes for, so that a request with the wrong method is answered
 * 405 with `Allow` (RFC 9110 §15.5.6) instead of 404. Fastify's router only answers "no route";
 * a second router, fed by the same route definitions, answers for every method.
 */
const routers = new WeakMap<FastifyInstance, { router: FindMyWay.Instance<FindMyWay.HTTPVersion.V1>; methods: Set<string> }>();

/** Records every route the instance gets from now on (call before any route is added). */
export function trackRouteMethods(fastify: FastifyInstance, routerOptions: FindMyWay.Config<FindMyWay.HTTPVersion.V1>): void {
  const entry = { router: FindMyWay(routerOptions), methods: new Set<string>() };
  routers.set(fastify, entry);
  fastify.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      entry.router.on(method as FindMyWay.HTTPMethod, route.url, () => {});
      entry.methods.add(method);
    }
  });
}

/** The methods the request's path has routes for, in a stable order; none for an unknown path. */
export function allowedMethods(request: FastifyRequest): string[] {
  const entry = routers.get(request.server);
  if (!entry) return [];
  const path = request.url.split('?')[0];
  return [...entry.methods].filter((method) => entry.router.find(method as FindMyWay.HTTPMethod, path) !== null).sort();
}
