import { sign } from 'node:crypto';
import { derToJose } from 'ecdsa-sig-formatter';
import type { SigningKey } from './key-ring.js';

/**
 * RFC 7515 compact serialisation, signed by node:crypto with the parsed key: ES256 as the raw
 * r‖s pair JWS wants (RFC 7518 §3.4), RS256 as PKCS#1 v1.5. Issuing a token is the token
 * endpoint's whole job, so this skips a general JWT library's option handling; verification
 * stays with @nestjs/jwt.
 *
 * ES256 is signed in DER and converted here: on Node 24 (OpenSSL 3.5) node:crypto's own
 * `dsaEncoding: 'ieee-p1363'` doubles the cost of a signature (about 50 µs against 25 µs).
 */
export function signCompactJws(key: SigningKey, typ: string, payload: Record<string, unknown>): string {
  const input = `${base64url({ alg: key.alg, typ, kid: key.kid })}.${base64url(payload)}`;
  const signature = sign('sha256', Buffer.from(input), key.privateKey);
  return `${input}.${key.alg === 'ES256' ? derToJose(signature, 'ES256') : signature.toString('base64url')}`;
}

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
