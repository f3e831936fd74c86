import ipaddr from 'ipaddr.js';
import { InvalidRedirectUrl, matchesRedirectPattern, parseRedirectUrl, type RedirectAddress } from './redirect-pattern.js';

// Where RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0 §3) may send the browser: the
// URLs a client registered with `--post-logout-redirect`, exact ones only (§3.1: the value "MUST
// have been previously registered"), never a pattern. A registered URL and a requested one are
// both parsed by the rules of redirect URLs (parseRedirectUrl) and compared by their matcher as
// exact patterns, that is as the URL standard serialises them (`href`): scheme and host lowercase,
// the scheme's default port dropped, an empty path written `/`; everything else, the query
// included, must be identical.

/**
 * Parses a post-logout redirect URL: a redirect URL (absolute, no userinfo, no fragment,
 * canonical host and path) that is https, or http on a loopback host (127.0.0.0/8, [::1],
 * localhost), where a developer's own machine is the only one that can answer.
 */
export function parsePostLogoutRedirectUri(text: string): RedirectAddress {
  const url = parseRedirectUrl(text);
  if (text.includes('*')) throw new InvalidRedirectUrl('must be an exact URL: * is no wildcard here');
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) throw new InvalidRedirectUrl('must use https (http only on a loopback address)');
  return url;
}

/** Whether `requested` is one of `registered`, compared as the header says; a malformed URL is not. */
export function isPostLogoutRedirectRegistered(requested: string, registered: readonly string[]): boolean {
  let url: RedirectAddress;
  try {
    url = parsePostLogoutRedirectUri(requested);
  } catch (error) {
    if (error instanceof InvalidRedirectUrl) return false;
    throw error;
  }
  return registered.some((uri) => matchesRedirectPattern(url, { kind: 'exact', url: parsePostLogoutRedirectUri(uri).href }));
}

function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost') return true;
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  return ipaddr.isValid(host) && ipaddr.parse(host).range() === 'loopback';
}
