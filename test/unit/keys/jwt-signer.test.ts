import { generateKeyPairSync } from 'node:crypto';
import { JwtService } from '@nestjs/jwt';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidJwt, JwtSignerService } from '../../../src/keys/jwt-signer.service.js';
import type { KeysService } from '../../../src/keys/keys.service.js';

/** A signer over one real ES256 key (SIGNING_ALG's), with a spy on the signature check and a set of revoked kids. */
function signer() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const revoked = new Set<string>();
  const keys = {
    defaultAlg: 'ES256',
    signingKey: async (alg = 'ES256') => {
      if (alg !== 'ES256') throw new Error(`cannot sign: no active ${alg} signing key`);
      return { kid: 'k1', alg: 'ES256' as const, privateKey };
    },
    verificationKey: async (kid: string) => (kid === 'k1' && !revoked.has(kid) ? { alg: 'ES256' as const, publicKey } : undefined),
    isRevoked: (kid: string) => revoked.has(kid),
  } as unknown as KeysService;
  const jwt = new JwtService();
  const check = vi.spyOn(jwt, 'verifyAsync');
  return { signer: new JwtSignerService(jwt, keys), check, revoked };
}

describe('JwtSignerService.verify', () => {
  afterEach(() => vi.useRealTimers());

  it('checks a signature once per token text, yet still refuses the token once it has expired', async () => {
    vi.useFakeTimers({ now: new Date('2026-11-21T08:00:00Z') });
    const { signer: jwts, check } = signer();
    const token = await jwts.sign({ iss: 'https://id.example', jti: 'j' }, { typ: 'vc-state+jwt', expiresInSeconds: 60 });
    const expected = { typ: 'vc-state+jwt', issuer: 'https://id.example' };

    await expect(jwts.verify(token, expected)).resolves.toMatchObject({ jti: 'j' });
    await expect(jwts.verify(token, expected)).resolves.toMatchObject({ jti: 'j' });
    expect(check).toHaveBeenCalledTimes(1);

    vi.setSystemTime(new Date('2026-11-21T08:01:00Z'));
    await expect(jwts.verify(token, expected)).rejects.toThrow(InvalidJwt);
  });

  it('checks a remembered token again in full against other expectations', async () => {
    const { signer: jwts } = signer();
    const token = await jwts.sign({ iss: 'https://id.example' }, { typ: 'at+jwt', expiresInSeconds: 60 });
    await jwts.verify(token, { typ: 'at+jwt', issuer: 'https://id.example' });
    await expect(jwts.verify(token, { typ: 'vc-state+jwt', issuer: 'https://id.example' })).rejects.toThrow('wrong token type');
    await expect(jwts.verify(token, { typ: 'at+jwt', issuer: 'https://other.example' })).rejects.toThrow(InvalidJwt);
  });

  it('never remembers a token whose signature did not check out', async () => {
    const { signer: jwts, check } = signer();
    const token = await jwts.sign({ iss: 'https://id.example' }, { typ: 'at+jwt', expiresInSeconds: 60 });
    const forged = `${token.slice(0, -4)}AAAA`;
    for (let attempt = 0; attempt < 2; attempt++) await expect(jwts.verify(forged, { typ: 'at+jwt' })).rejects.toThrow(InvalidJwt);
    expect(check).toHaveBeenCalledTimes(2);
  });

  it('tells which key signed a token, from the cache too', async () => {
    const { signer: jwts } = signer();
    const token = await jwts.sign({ sub: 'device' }, { typ: 'at+jwt', expiresInSeconds: 60 });
    for (let attempt = 0; attempt < 2; attempt++) {
      await expect(jwts.verifyWithKid(token, { typ: 'at+jwt' })).resolves.toEqual({ claims: expect.objectContaining({ sub: 'device' }), kid: 'k1' });
    }
  });

  it('takes the type in any case, as media types are (an ID token is typed JWT)', async () => {
    const { signer: jwts } = signer();
    const token = await jwts.sign({ sub: 'user' }, { typ: 'JWT', expiresInSeconds: 60 });
    await expect(jwts.verify(token, { typ: 'JWT' })).resolves.toMatchObject({ sub: 'user' });
    await expect(jwts.verify(token, { typ: 'jwt' })).resolves.toMatchObject({ sub: 'user' });
  });

  it("refuses a remembered token as soon as its key is revoked, without checking its signature again", async () => {
    const { signer: jwts, check, revoked } = signer();
    const token = await jwts.sign({ sub: 'device' }, { typ: 'at+jwt', expiresInSeconds: 60 });
    await jwts.verify(token, { typ: 'at+jwt' });
    revoked.add('k1');
    await expect(jwts.verify(token, { typ: 'at+jwt' })).rejects.toThrow('signing key revoked');
    await expect(jwts.verify(token, { typ: 'at+jwt' })).rejects.toThrow(InvalidJwt);
    expect(check).toHaveBeenCalledTimes(1);
  });
});
