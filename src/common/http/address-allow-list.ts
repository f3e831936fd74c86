import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = { network: Address; bits: number };

/** Whether a client address may pass. */
export type AddressAllowList = (address: string) => boolean;

export class InvalidAllowListEntry extends Error {
  constructor(readonly entry: string) {
    super(`"${entry}" is neither an IPv4/IPv6 address nor a CIDR range`);
    this.name = 'InvalidAllowListEntry';
  }
}

/**
 * Comma-separated addresses and CIDR ranges, IPv4 and IPv6. An IPv4 client seen as IPv4-mapped
 * IPv6 (`::ffff:10.0.0.1`, from a dual-stack socket) is matched as the IPv4 address it is, against
 * IPv4 entries and against mapped ones. Throws on the first entry that is not an address or range, and on a list naming none.
 */
export function parseAddressAllowList(value: string): AddressAllowList {
  const ranges = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map(parseRange);
  if (ranges.length === 0) throw new InvalidAllowListEntry(value);
  return (address) => {
    const parsed = parseAddress(address);
    const client = parsed && unmapped(parsed);
    return client !== undefined && ranges.some(({ network, bits }) => client.kind() === network.kind() && client.match(network, bits));
  };
}

function parseRange(entry: string): Range {
  const [text, prefix, ...rest] = entry.split('/');
  const address = parseAddress(text);
  const width = address?.kind() === 'ipv4' ? 32 : 128;
  const bits = prefix === undefined ? width : /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
  if (!address || rest.length > 0 || !(bits <= width)) throw new InvalidAllowListEntry(entry);
  // The mapped range ::ffff:a.b.c.d/96+n is the IPv4 range a.b.c.d/n (mapped clients are matched as IPv4).
  const network = bits >= 96 ? unmapped(address) : address;
  return { network, bits: network === address ? bits : bits - 96 };
}

/** Dotted-quad IPv4 only (ipaddr.js would also read "10" or "0x0a.1" as addresses), or IPv6. */
function parseAddress(text: string): Address | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  return ipaddr.IPv6.isValid(text) ? ipaddr.IPv6.parse(text) : undefined;
}

const unmapped = (address: Address): Address =>
  address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : address;
