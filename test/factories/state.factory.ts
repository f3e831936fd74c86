import { createHmac, randomBytes } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { KeysService } from '../../src/keys/keys.service.js';
import type { TestApp } from '../setup/test-app.js';

/** The JOSE `typ` of a helper state. */
export const STATE_TYP = 'vc-state+jwt';

export interface HelperConfigResponse {
  authorize_url: string;
  code_url: string;
  accesstoken_request_url: string;
  interval: number;
  expires_in: number;
}

/** POST /external/oauth2helper/config/{client_id} with `query` (a string keeps repeated or raw parameters). */
export function requestConfig(app: TestApp, clientId: string, query: Record<string, string> | string = ''): Promise<Response> {
  const search = typeof query === 'string' ? query : new URLSearchParams(query).toString();
  return fetch(`${app.baseUrl}/external/oauth2helper/config/${encodeURIComponent(clientId)}${search ? `?${search}` : ''}`, { method: 'POST' });
}

/** A helper configuration that must succeed, plus its state. */
export async function issueState(app: TestApp, clientId: string, query: Record<string, string> = {}) {
  const response = await requestConfig(app, clientId, query);
  if (response.status !== 200) throw new Error(`config answered ${response.status}: ${await response.text()}`);
  const config = (await response.json()) as HelperConfigResponse;
  return { ...config, state: new URL(config.authorize_url).searchParams.get('state')! };
}

export const stateHeader = (state: string) => decodeProtectedHeader(state) as Record<string, unknown>;
export const stateClaims = (state: string) => decodeJwt(state) as Record<string, unknown> & { jti: string; iat: number; exp: number };

/** Claims shaped like the service's own states; `overrides` change or add any of them. */
export function claimsFor(app: TestApp, clientId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return { iss: app.env.identityUrl, jti: randomBytes(16).toString('base64url'), client_id: clientId, iat: now, exp: now + 600, ...overrides };
}

/** Signs `claims` exactly as-is with the service's active private key (so `exp` may lie in the past). */
export async function signWithServiceKey(app: TestApp, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  const key = await app.get(KeysService).signingKey();
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: STATE_TYP, ...header }).sign(key.privateKey);
}

const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An unsecured JWT (RFC 7519 §6): `alg: none`, empty signature. */
export function unsignedState(header: Record<string, unknown>, claims: Record<string, unknown>): string {
  return `${segment({ ...header, alg: 'none' })}.${segment(claims)}.`;
}

/** An HS256 JWT keyed with `secret`: with the public key as secret, the classic algorithm confusion. */
export function hmacState(secret: string | Buffer, header: Record<string, unknown>, claims: Record<string, unknown>): string {
  const input = `${segment({ ...header, alg: 'HS256' })}.${segment(claims)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

/** The service's active public key as PEM, its id, and its algorithm. */
export async function servicePublicKey(app: TestApp): Promise<{ kid: string; alg: string; pem: string }> {
  const keys = app.get(KeysService);
  const { kid, alg } = await keys.signingKey();
  const verification = await keys.verificationKey(kid);
  return { kid, alg, pem: verification!.publicKey.export({ type: 'spki', format: 'pem' }) as string };
}

/** The same token with one byte in the middle of its signature changed. */
export function flipSignatureByte(token: string): string {
  const [header, payload, signature] = token.split('.');
  const bytes = Buffer.from(signature, 'base64url');
  bytes[Math.floor(bytes.length / 2)] ^= 0x01;
  return `${header}.${payload}.${bytes.toString('base64url')}`;
}
