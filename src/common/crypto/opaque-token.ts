import { createHash, randomBytes } from 'node:crypto';

/** A random URL-safe value of `bytes` bytes (codes, refresh tokens, secrets, ids). */
export const randomToken = (bytes: number) => randomBytes(bytes).toString('base64url');

/** What is stored in place of a high-entropy secret: its SHA-256 digest. */
export const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest();
