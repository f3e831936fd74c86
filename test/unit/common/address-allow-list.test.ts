import { describe, expect, it } from 'vitest';
import { InvalidAllowListEntry, parseAddressAllowList } from '../../../src/common/http/address-allow-list.js';

describe('parseAddressAllowList', () => {
  const allowed = parseAddressAllowList(' 10.0.0.0/8, 192.0.2.7 ,2001:db8::/32, ::1, ::ffff:198.51.100.0/120');

  it('matches IPv4 ranges and single addresses', () => {
    expect(['10.0.0.1', '10.255.255.255', '192.0.2.7'].map(allowed)).toEqual([true, true, true]);
    expect(['11.0.0.1', '192.0.2.8', '9.255.255.255'].map(allowed)).toEqual([false, false, false]);
  });

  it('matches IPv6 ranges and single addresses, in any spelling', () => {
    expect(['2001:db8::1', '2001:0DB8:ffff::', '::1', '0:0:0:0:0:0:0:1'].map(allowed)).toEqual([true, true, true, true]);
    expect(['2001:db9::1', '::2'].map(allowed)).toEqual([false, false]);
  });

  it('matches an IPv4-mapped client as its IPv4 address, against IPv4 and mapped entries', () => {
    expect(['::ffff:10.1.2.3', '::ffff:198.51.100.9', '198.51.100.200'].map(allowed)).toEqual([true, true, true]);
    expect(allowed('::ffff:11.1.2.3')).toBe(false);
  });

  it('refuses what is not an address', () => {
    expect(['', 'localhost', 'unknown', '10'].map(allowed)).toEqual([false, false, false, false]);
  });

  it.each(['10.0.0.0/33', '10', '0x0a.0.0.1', '10.0.0.0/8/8', 'example.com', '2001:db8::/129', '10.0.0.0/-1', ' , '])('throws on "%s"', (entry) => {
    expect(() => parseAddressAllowList(entry)).toThrow(InvalidAllowListEntry);
  });
});
