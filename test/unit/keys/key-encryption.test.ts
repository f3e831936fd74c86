import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadEnv } from '../../../src/config/env.js';
import { EnvelopeError, open, parseKeyEncryptionKey, seal } from '../../../src/keys/key-encryption.js';
import { KeyEncryptionError, PrivateKeyVaultService } from '../../../src/keys/private-key-vault.service.js';

const PEM = '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n';
const KEK = randomBytes(32);

describe('key envelopes (AES-256-GCM)', () => {
  it('opens what it sealed, with the same KEK and kid', () => {
    expect(open(KEK, 'kid-1', seal(KEK, 'kid-1', PEM))).toBe(PEM);
  });

  it('is versioned, uses a fresh 96-bit IV each time and never contains the plain text', () => {
    const [first, second] = [seal(KEK, 'kid-1', PEM), seal(KEK, 'kid-1', PEM)];
    expect(first[0]).toBe(1);
    expect(first.subarray(1, 13).equals(second.subarray(1, 13))).toBe(false);
    expect(first.toString('latin1')).not.toContain('PRIVATE KEY');
    expect(first.length).toBe(1 + 12 + 16 + Buffer.byteLength(PEM));
  });

  it('refuses another KEK, another kid (an envelope moved to another row) and any changed byte', () => {
    const envelope = seal(KEK, 'kid-1', PEM);
    expect(() => open(randomBytes(32), 'kid-1', envelope)).toThrow(EnvelopeError);
    expect(() => open(KEK, 'kid-2', envelope)).toThrow(EnvelopeError);
    for (const index of [0, 5, 20, envelope.length - 1]) {
      const tampered = Buffer.from(envelope);
      tampered[index] ^= 0x01;
      expect(() => open(KEK, 'kid-1', tampered)).toThrow(EnvelopeError);
    }
    expect(() => open(KEK, 'kid-1', envelope.subarray(0, 20))).toThrow(EnvelopeError);
  });

  it('reads KEYS_ENCRYPTION_KEY as hex, base64 or base64url', () => {
    for (const encoding of ['hex', 'base64', 'base64url'] as const) expect(parseKeyEncryptionKey(KEK.toString(encoding)).equals(KEK)).toBe(true);
  });
});

describe('PrivateKeyVaultService', () => {
  const vault = (kek?: Buffer) => new PrivateKeyVaultService(loadEnv(kek ? { KEYS_ENCRYPTION_KEY: kek.toString('base64') } : {}));

  it('stores plain PEM without a KEK and a sealed envelope with one', () => {
    expect(vault().store('k', PEM, false)).toEqual({ privateKeyPem: PEM, privateKeyEncrypted: null });
    const sealed = vault(KEK).store('k', PEM, true);
    expect(sealed.privateKeyPem).toBeNull();
    expect(vault(KEK).open('k', sealed)).toBe(PEM);
  });

  it('names KEYS_ENCRYPTION_KEY, in one line, when it is missing or wrong', () => {
    const sealed = vault(KEK).store('k', PEM, true);
    expect(() => vault().open('k', sealed)).toThrow(/^the private signing keys are stored encrypted, but KEYS_ENCRYPTION_KEY is not set/);
    expect(() => vault(randomBytes(32)).open('k', sealed)).toThrow(/^KEYS_ENCRYPTION_KEY does not decrypt the stored private signing keys/);
    expect(() => vault(randomBytes(32)).open('k', sealed)).toThrow(KeyEncryptionError);
    expect(() => vault().store('k', PEM, true)).toThrow(KeyEncryptionError);
  });

  it('stores a new key beside the active one as the active one is stored, after proving the KEK opens it', () => {
    const plain = { kid: 'a', privateKeyPem: PEM, privateKeyEncrypted: null };
    const sealed = { kid: 'a', ...vault(KEK).store('a', PEM, true) };
    expect(vault(KEK).encryptsLike(plain)).toBe(false);
    expect(vault().encryptsLike(plain)).toBe(false);
    expect(vault(KEK).encryptsLike(sealed)).toBe(true);
    expect(() => vault().encryptsLike(sealed)).toThrow(KeyEncryptionError);
    expect(() => vault(randomBytes(32)).encryptsLike(sealed)).toThrow(KeyEncryptionError);
  });
});
