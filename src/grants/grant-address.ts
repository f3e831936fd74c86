import ipaddr from 'ipaddr.js';

/**
 * A requester's address as grants keep it (`inet`: `grants.created_address`,
 * `refresh_tokens.rotated_address`): canonical, an IPv4-mapped IPv6 address as IPv4 (a dual-stack
 * listener's view of an IPv4 peer), without an IPv6 zone. Null for anything else (no peer address,
 * or a forwarded header TRUST_PROXY believes holding no address), so that what a request says of
 * itself never fails the statement that issues or refreshes its grant.
 */
export function grantAddress(address: string | undefined): string | null {
  if (address === undefined || !ipaddr.isValid(address)) return null;
  const parsed = ipaddr.process(address);
  return parsed.kind() === 'ipv4' ? parsed.toString() : new ipaddr.IPv6((parsed as ipaddr.IPv6).parts).toString();
}
