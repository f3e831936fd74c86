import type { Env } from '../config/env.js';
import { DISCOVERY_PATH } from './openid-configuration.js';

/**
 * OpenID Connect Discovery §4 appends the well-known path to the issuer: for an IDENTITY_URL with
 * a path (https://host/identity), clients ask https://host/identity/.well-known/openid-configuration.
 * The service answers its routes at the root, as for RFC 8414's path-inserted copy, so that one
 * address is served as the root's document (a Fastify `rewriteUrl`, before routing); every other
 * URL is left as it is. Undefined when the issuer has no path.
 */
export function issuerPathDiscovery(env: Env): ((request: { url?: string }) => string) | undefined {
  const issuerPath = new URL(env.identityUrl).pathname;
  if (issuerPath === '/') return undefined;
  const underIssuer = `${issuerPath}${DISCOVERY_PATH}`;
  return ({ url = '/' }) => {
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    return path === underIssuer ? DISCOVERY_PATH + url.slice(path.length) : url;
  };
}
