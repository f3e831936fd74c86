import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Envelope of an encrypted private key: version byte ‖ 96-bit IV ‖ 128-bit GCM tag ‖ ciphertext.
 * The version leads so a later format (another cipher, a rotated KEK) can be told apart.
 */
const VERSION = 1;
const IV_BYTES = 12; // the size GCM is defined for (NIST SP 800-38D §5.2.1.1)
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + IV_BYTES + TAG_BYTES;

/** Refused to open an envelope: not ours, another key's, or sealed with another KEK. */
export class EnvelopeError extends Error {}

/** KEYS_ENCRYPTION_KEY as 32 bytes: 64 hex digits, or base64 / base64url (the formats Env accepts). */
export function parseKeyEncryptionKey(text: string): Buffer {
  const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64url');
  if (bytes.length !== 32) throw new Error('KEYS_ENCRYPTION_KEY must be 32 bytes as base64 or hex');
  return bytes;
}

/**
 * AES-256-GCM with a random IV per seal. The kid is authenticated data: an envelope copied onto
 * another key's row does not open there, so rows cannot be swapped to sign with the wrong key.
 */
export function seal(kek: Buffer, kid: string, plaintext: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', kek, iv, { authTagLength: TAG_BYTES }).setAAD(Buffer.from(kid, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), ciphertext]);
}

export function open(kek: Buffer, kid: string, envelope: Buffer): string {
  if (envelope.length <= HEADER_BYTES || envelope[0] !== VERSION) throw new EnvelopeError('not a version 1 key envelope');
  const iv = envelope.subarray(1, 1 + IV_BYTES);
  const tag = envelope.subarray(1 + IV_BYTES, HEADER_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', kek, iv, { authTagLength: TAG_BYTES }).setAAD(Buffer.from(kid, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(envelope.subarray(HEADER_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    // GCM only says "unable to authenticate data"; the caller knows which setting to name.
    throw new EnvelopeError('authentication failed');
  }
}
