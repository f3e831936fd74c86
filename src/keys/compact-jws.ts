import { sign } from 'node:crypto';
import type { SigningKey } from './key-ring.js';

/**
 * RFC 7515 compact serialisation, signed by node:crypto with the parsed key: ES256 as the raw
 * r‖s pair JWS wants (RFC 7518 §3.4), RS256 as PKCS#1 v1.5. Issuing a token is the token
 * endpoint's whole job, and a general JWT library's option handling and DER-to-JOSE conversion
 * cost a third as much as the signature itself; verification stays with @nestjs/jwt.
 */
export function signCompactJws(key: SigningKey, typ: string, payload: Record<string, unknown>): string {
  const input = `${base64url({ alg: key.alg, typ, kid: key.kid })}.${base64url(payload)}`;
  const signature = sign('sha256', Buffer.from(input), key.alg === 'ES256' ? { key: key.privateKey, dsaEncoding: 'ieee-p1363' } : key.privateKey);
  return `${input}.${signature.toString('base64url')}`;
}

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
