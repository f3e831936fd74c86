import ipaddr from 'ipaddr.js';

/**
 * The part of a client address the slow-downs (sign-in, user-code entry) count: an IPv4 address as it is, an IPv6
 * address by its /64 (one subscriber gets a whole /64, so counting single IPv6 addresses would
 * give an attacker 2^64 fresh ones). IPv4-mapped IPv6 counts as the IPv4 address.
 */
export function addressPrefix(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const ipv6 = parsed as ipaddr.IPv6;
  if (ipv6.isIPv4MappedAddress()) return ipv6.toIPv4Address().toString();
  return `${ipv6.parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`;
}
