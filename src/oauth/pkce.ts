import { createHash, timingSafeEqual } from 'node:crypto';

/** RFC 7636 §4.1: 43–128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** A S256 challenge is the base64url of a SHA-256 digest: 43 characters. */
export const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export const isVerifier = (value: string) => VERIFIER.test(value);

export const s256Challenge = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url');

/** RFC 7636 §4.6, S256 only (`plain` is refused when the challenge is registered). */
export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!isVerifier(verifier)) return false;
  const expected = Buffer.from(challenge);
  const actual = Buffer.from(s256Challenge(verifier));
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
