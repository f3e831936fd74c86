import ipaddr from 'ipaddr.js';

// Redirect URLs and the patterns clients register for them (CONTRACT.md, "Device authorization
// helper"). A pattern is either an exact URL, or a URL whose host is a CIDR range of private or
// loopback addresses, with an optional `*` port: `http://192.168.0.0/16:*/callback`.
//
// Every redirect address the service may send a browser to (the helper's redirect_url, a standard
// request's redirect_uri, a post-logout redirect, and each registered one) is read by the one
// parser here, parseRedirectUrl, and compared by the one matcher, matchesRedirectPattern, which
// takes only what that parser returned: what it refuses (user information among it) can match nothing.

declare const parsed: unique symbol;
/** A URL parseRedirectUrl accepted: the only kind the matchers take. */
export type RedirectAddress = URL & { readonly [parsed]: true };

export type RedirectPattern =
  | { kind: 'exact'; url: string }
  | { kind: 'range'; scheme: string; network: ipaddr.IPv4 | ipaddr.IPv6; prefix: number; port: number | '*' | null; path: string };

export class InvalidRedirectUrl extends Error {}

// Private-use and loopback ranges only: a range pattern may never cover a public address.
const PRIVATE_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '127.0.0.0/8', '169.254.0.0/16', '::1/128', 'fc00::/7', 'fe80::/10'].map(
  (cidr) => ipaddr.parseCIDR(cidr),
);

const RAW_URL = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/;
const IPV4_OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = `${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}`;
const RANGE_PATTERN = new RegExp(`^(https?)://(?:(${IPV4})/(\\d{1,2})|\\[([0-9a-fA-F:.]+)/(\\d{1,3})\\])(?::(\\*|\\d{1,5}))?(/[^?#]*)$`);

/**
 * Parses a redirect URL strictly: absolute http(s), no userinfo, no fragment, no control
 * characters or backslashes, the host and path spelled exactly as the URL standard would
 * write them (so no decimal/octal/hex IPv4, no percent-encoded host, no `.`/`..` segments).
 */
export function parseRedirectUrl(text: string): RedirectAddress {
  if (/[\x00-\x20\x7f\\]/.test(text)) throw new InvalidRedirectUrl('must not contain spaces, control characters or backslashes');
  const raw = RAW_URL.exec(text);
  if (!raw) throw new InvalidRedirectUrl('must be an absolute http(s) URL');
  const [, scheme, authority, rawPath, , fragment] = raw;
  if (!['http', 'https'].includes(scheme.toLowerCase())) throw new InvalidRedirectUrl('must use http or https');
  if (authority.includes('@')) throw new InvalidRedirectUrl('must not contain user information');
  if (fragment !== undefined) throw new InvalidRedirectUrl('must not contain a fragment');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidRedirectUrl('must be an absolute http(s) URL');
  }
  const rawHost = authority.replace(/:\d*$/, '').toLowerCase();
  if (rawHost === '' || rawHost !== url.hostname) throw new InvalidRedirectUrl('host must be spelled canonically');
  if ((rawPath || '/') !== url.pathname) throw new InvalidRedirectUrl('path must not contain dot segments or non-canonical escapes');
  return url as RedirectAddress;
}

/** parseRedirectUrl for a caller that needs no reason: undefined for what it refuses. */
export function readRedirectUrl(text: string): RedirectAddress | undefined {
  try {
    return parseRedirectUrl(text);
  } catch (error) {
    if (error instanceof InvalidRedirectUrl) return undefined;
    throw error;
  }
}

/** Parses a registered pattern; throws InvalidRedirectUrl with the reason. */
export function parseRedirectPattern(text: string): RedirectPattern {
  const range = RANGE_PATTERN.exec(text);
  // `*` is a wildcard only as a range's port; anywhere else it would be taken literally, which is
  // never what the operator meant (`http://example.com/*` is no pattern).
  const wildcard = new InvalidRedirectUrl('may contain * only as the port of an address range, as in http://192.168.0.0/16:*/callback');
  // An IP host followed by /<prefix> is read as a range; anything else must be an exact URL.
  if (!range) {
    const url = parseRedirectUrl(text);
    if (text.includes('*')) throw wildcard;
    return { kind: 'exact', url: url.href };
  }
  const [, scheme, v4, v4Prefix, v6, v6Prefix, port, path] = range;
  if (path.includes('*')) throw wildcard;
  const network = ipaddr.parse(v4 ?? v6);
  const prefix = Number(v4Prefix ?? v6Prefix);
  if (prefix > (network.kind() === 'ipv4' ? 32 : 128)) throw new InvalidRedirectUrl('has a prefix length out of range');
  const inPrivateRange = PRIVATE_RANGES.some(
    ([base, basePrefix]) => base.kind() === network.kind() && prefix >= basePrefix && network.match(base, basePrefix),
  );
  if (!inPrivateRange) throw new InvalidRedirectUrl('address range must lie within private or loopback addresses');
  const portNumber = port === undefined || port === '*' ? null : Number(port);
  if (portNumber !== null && (portNumber < 1 || portNumber > 65535)) throw new InvalidRedirectUrl('has a port out of range');
  // The path must itself be canonical: check it on a concrete URL.
  const sample = parseRedirectUrl(`${scheme}://${network.kind() === 'ipv4' ? network.toString() : `[${network.toString()}]`}${path}`);
  return { kind: 'range', scheme, network, prefix, port: port === '*' ? '*' : portNumber, path: sample.pathname };
}

const LOOPBACK_RANGES = ['127.0.0.0/8', '::1/128'].map((cidr) => ipaddr.parseCIDR(cidr));

/**
 * Whether a standard authorization request's `redirect_uri` is allowed: registered exactly, or a
 * loopback address on any port for a native app (RFC 8252 §7.3). The helper's private-network
 * ranges are not for it (RFC 9700 §4.1.3): the helper's link names the device's host to the user,
 * a standard request may be answered silently.
 */
export function isAppRedirectAllowed(url: RedirectAddress, patterns: readonly string[]): boolean {
  return patterns.some((text) => {
    const pattern = parseRedirectPattern(text);
    const loopbackOnly =
      pattern.kind === 'exact' ||
      LOOPBACK_RANGES.some(([base, basePrefix]) => base.kind() === pattern.network.kind() && pattern.prefix >= basePrefix && pattern.network.match(base, basePrefix));
    return loopbackOnly && matchesRedirectPattern(url, pattern);
  });
}

/** Whether `url` (from parseRedirectUrl) is allowed by `pattern`. */
export function matchesRedirectPattern(url: RedirectAddress, pattern: RedirectPattern): boolean {
  if (pattern.kind === 'exact') return url.href === pattern.url;
  if (url.protocol !== `${pattern.scheme}:` || url.pathname !== pattern.path || url.search !== '') return false;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!ipaddr.isValid(host)) return false;
  const address = ipaddr.parse(host);
  if (address.kind() !== pattern.network.kind() || !address.match(pattern.network, pattern.prefix)) return false;
  if (pattern.port === '*') return true;
  // URL drops the scheme's default port, and a pattern without a port means the default one.
  const port = url.port === '' ? defaultPort(url) : Number(url.port);
  return port === (pattern.port ?? defaultPort(url));
}

/** Whether `url` is allowed by any of the client's registered pattern strings. */
export function isRedirectAllowed(url: RedirectAddress, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => matchesRedirectPattern(url, parseRedirectPattern(pattern)));
}

const defaultPort = (url: URL) => (url.protocol === 'https:' ? 443 : 80);
