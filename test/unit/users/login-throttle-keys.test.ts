import { describe, expect, it } from 'vitest';
import { loadEnv } from '../../../src/config/env.js';
import { addressPrefix } from '../../../src/common/http/address-prefix.js';
import { PasswordCheckGateService } from '../../../src/users/password-check-gate.service.js';

describe('addressPrefix', () => {
  it('keeps an IPv4 address whole', () => {
    expect(addressPrefix('203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts an IPv6 address by its /64, however it is spelled', () => {
    expect(addressPrefix('2001:db8:aa:bb::1')).toBe('2001:db8:aa:bb::/64');
    expect(addressPrefix('2001:0db8:00aa:00bb:ffff:1:2:3')).toBe('2001:db8:aa:bb::/64');
    expect(addressPrefix('2001:db8:aa:bc::1')).not.toBe(addressPrefix('2001:db8:aa:bb::1'));
  });

  it('counts an IPv4-mapped IPv6 address as the IPv4 address', () => {
    expect(addressPrefix('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });
});

describe('PasswordCheckGateService', () => {
  it('lets PASSWORD_CHECK_CONCURRENCY checks in at once, refuses the next, and takes a slot back once', () => {
    const gate = new PasswordCheckGateService(loadEnv({ PASSWORD_CHECK_CONCURRENCY: '2' }));
    const first = gate.tryEnter();
    const second = gate.tryEnter();
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    expect(gate.tryEnter()).toBeNull();
    first!();
    first!(); // a second release of the same slot frees nothing more
    expect(gate.tryEnter()).not.toBeNull();
    expect(gate.tryEnter()).toBeNull();
  });
});
