import { generateKeyPairSync } from 'node:crypto';
import { compactVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { signCompactJws } from '../../../src/keys/compact-jws.js';

describe('signCompactJws', () => {
  it('writes ES256 signatures as the 64-byte r‖s pair, including an r or s that DER writes shorter or padded', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const key = { kid: 'k1', alg: 'ES256' as const, privateKey };
    // One r or s in 128 starts with a zero byte (DER drops it) and one in 2 with a high bit (DER pads it): 1,000 tokens meet both.
    for (let i = 0; i < 1000; i++) {
      const token = signCompactJws(key, 'at+jwt', { jti: String(i) });
      expect(Buffer.from(token.split('.')[2], 'base64url')).toHaveLength(64);
      const { payload, protectedHeader } = await compactVerify(token, publicKey);
      expect(protectedHeader).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: 'k1' });
      expect(JSON.parse(Buffer.from(payload).toString())).toEqual({ jti: String(i) });
    }
  });

  it('writes RS256 signatures that verify with the public key', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const token = signCompactJws({ kid: 'r1', alg: 'RS256', privateKey }, 'JWT', { sub: 'u' });
    await expect(compactVerify(token, publicKey)).resolves.toMatchObject({ protectedHeader: { alg: 'RS256', kid: 'r1' } });
  });
});
