import { timingSafeEqual } from 'node:crypto';
import { randomToken, sha256 } from '../common/crypto/opaque-token.js';

/** 256 random bits. Shown once; only its hash is stored. */
export const generateClientSecret = () => randomToken(32);

/**
 * 128 random bits, URL-safe (client ids appear in paths), never starting with "-": the CLI takes
 * ids as arguments, and `client:show -abc…` would read as an option.
 */
export function generateClientId(): string {
  for (;;) {
    const id = randomToken(16);
    if (!id.startsWith('-')) return id;
  }
}

/**
 * Whether `id` could be a client id at all: ids are made by generateClientId (22 base64url
 * characters), so anything else (NUL, control characters, 3,000 characters) is unknown without
 * asking the database, which would refuse some of it outright.
 */
export const isPlausibleClientId = (id: string) => /^[A-Za-z0-9_-]{1,64}$/.test(id);

/**
 * SHA-256, unsalted and fast on purpose: a 256-bit random secret cannot be brute-forced, so a
 * slow password hash would only cap the token endpoint's throughput.
 */
export const hashClientSecret = sha256;

/** Constant-time: compares fixed-length digests, so timing reveals nothing about the stored hash. */
export function secretMatchesHash(secret: string, hash: Buffer): boolean {
  const candidate = hashClientSecret(secret);
  return candidate.length === hash.length && timingSafeEqual(candidate, hash);
}
