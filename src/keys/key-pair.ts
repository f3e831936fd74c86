import { generateKeyPair as generateNodeKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import type { SigningAlg } from './signing-key.entity.js';

const generate = promisify(generateNodeKeyPair);

export interface GeneratedKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: JWK;
  privateKeyPem: string;
}

/** A fresh key pair: P-256 for ES256, 2048-bit RSA for RS256 (RFC 7518 §3.3 minimum). */
export async function generateSigningKey(alg: SigningAlg): Promise<GeneratedKey> {
  const { publicKey, privateKey } =
    alg === 'ES256' ? await generate('ec', { namedCurve: 'P-256' }) : await generate('rsa', { modulusLength: 2048 });
  const jwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk);
  return {
    kid,
    alg,
    publicJwk: { ...jwk, kid, alg, use: 'sig' },
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}
