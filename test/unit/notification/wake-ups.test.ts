import { describe, expect, it } from 'vitest';
import { wakeKey, wakeKeysIn, wakePayloads } from '../../../src/notification/publish/wake-ups.js';

describe('a transaction’s wake-up', () => {
  it('names each recipient once, by a key of 6 characters, in one payload up to 1,333 recipients', () => {
    const recipients = Array.from({ length: 500 }, (_, index) => `client-${index}`);
    const payloads = wakePayloads([...recipients, ...recipients.slice(0, 10)]);
    expect(payloads).toHaveLength(1);
    expect(wakeKeysIn(payloads[0])).toEqual(recipients.map(wakeKey));
    expect(wakeKey('client-1')).toMatch(/^[\w-]{6}$/);
  });

  it('splits more recipients over payloads that each stay under PostgreSQL’s 8,000 bytes', () => {
    const recipients = Array.from({ length: 3000 }, (_, index) => `client-${index}`);
    const payloads = wakePayloads(recipients);
    expect(payloads.length).toBe(3);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThan(8000);
    expect(payloads.flatMap(wakeKeysIn)).toEqual(recipients.map(wakeKey));
  });

  it('reads no key from a payload of another shape', () => {
    expect(wakeKeysIn('x')).toEqual([]);
    expect(wakeKeysIn('')).toEqual([]);
  });
});
