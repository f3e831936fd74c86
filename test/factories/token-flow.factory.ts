import { createHash, randomBytes } from 'node:crypto';
import { signIn } from '../setup/browserless-login.js';
import { query } from '../setup/database.js';
import type { TestApp } from '../setup/test-app.js';
import type { TestClient } from './oauth.factory.js';

/**
 * The helper flow from the outside, for tests of /sso/token, introspection and revocation:
 * get an authorization code (redirect or polling), exchange it, refresh, inspect.
 */

/** A client redirect pattern covering the loopback range, and a redirect URL it allows. */
export const LOOPBACK_PATTERN = 'http://127.0.0.0/8:*/callback';
export const LOOPBACK_REDIRECT = 'http://127.0.0.1:8765/callback';

export interface PortalUser {
  username: string;
  password: string;
}

export interface CodeOptions {
  /** Redirect flow: the code comes back on the 302 to this URL. Without it, code_url is polled (use CODE_POLL_MIN_INTERVAL=0). */
  redirectUrl?: string;
  /** RFC 7636 S256 challenge sent to the helper config endpoint. */
  codeChallenge?: string;
}

/** The helper flow's token response. */
export interface TokenResponse {
  access_token: string;
  expires_in: number;
  token_type: string;
  scope: string | null;
  refresh_token: string;
}

export interface FormResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  /** The parsed JSON body (undefined for an empty body). */
  body: T;
  text: string;
}

/** A user signs in through the helper flow; returns the authorization code the device gets. */
export async function authorizationCode(app: TestApp, client: TestClient, user: PortalUser, options: CodeOptions = {}): Promise<string> {
  const config = new URL(`/external/oauth2helper/config/${encodeURIComponent(client.id)}`, app.baseUrl);
  if (options.redirectUrl) config.searchParams.set('redirect_url', options.redirectUrl);
  if (options.codeChallenge) {
    config.searchParams.set('code_challenge', options.codeChallenge);
    config.searchParams.set('code_challenge_method', 'S256');
  }
  const configResponse = await fetch(config, { method: 'POST' });
  if (configResponse.status !== 200) throw new Error(`helper config answered ${configResponse.status}: ${await configResponse.text()}`);
  const { authorize_url, code_url } = (await configResponse.json()) as { authorize_url: string; code_url: string };

  const login = await signIn(authorize_url, user);
  await login.text();
  if (options.redirectUrl) {
    if (login.status !== 302) throw new Error(`login answered ${login.status}, expected a redirect`);
    const code = new URL(login.headers.get('location')!).searchParams.get('code');
    if (!code) throw new Error('the redirect carried no code');
    return code;
  }
  if (login.status !== 200) throw new Error(`login answered ${login.status}`);
  const poll = await fetch(code_url);
  if (poll.status !== 200) throw new Error(`code_url answered ${poll.status} (is CODE_POLL_MIN_INTERVAL=0?)`);
  return ((await poll.json()) as { code: string }).code;
}

/** application/x-www-form-urlencoded encoding of one value (space as '+'), as RFC 6749 §2.3.1 wants inside Basic. */
export const formEncode = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);

/** `Authorization: Basic` for client_secret_basic: id and secret form-encoded, then base64. */
export const basicAuth = (clientId: string, secret: string, encode: (value: string) => string = formEncode) =>
  `Basic ${Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64')}`;

/** POSTs a form (or a raw body with its own content type) and reads the JSON answer. */
export async function postForm<T = Record<string, unknown>>(
  app: TestApp,
  path: string,
  params: Record<string, string> | URLSearchParams | string,
  headers: Record<string, string> = {},
): Promise<FormResponse<T>> {
  const response = await fetch(`${app.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: typeof params === 'string' ? params : new URLSearchParams(params),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as T, text };
}

/** client_secret_post credentials. */
export const credentials = (client: TestClient) => ({ client_id: client.id, client_secret: client.secret });

export function exchangeCode(app: TestApp, client: TestClient, code: string, extra: Record<string, string> = {}) {
  return postForm(app, '/sso/token', { grant_type: 'authorization_code', code, ...credentials(client), ...extra });
}

export function refresh(app: TestApp, client: TestClient, refreshToken: string, extra: Record<string, string> = {}) {
  return postForm(app, '/sso/token', { grant_type: 'refresh_token', refresh_token: refreshToken, ...credentials(client), ...extra });
}

/** Sign-in, code and exchange in one: the tokens a device holds afterwards (throws unless 200). */
export async function issueTokens(
  app: TestApp,
  client: TestClient,
  user: PortalUser,
  options: CodeOptions & { scope?: string; codeVerifier?: string } = {},
): Promise<TokenResponse> {
  const code = await authorizationCode(app, client, user, options);
  const extra: Record<string, string> = {};
  if (options.scope !== undefined) extra.scope = options.scope;
  if (options.codeVerifier !== undefined) extra.code_verifier = options.codeVerifier;
  const response = await exchangeCode(app, client, code, extra);
  if (response.status !== 200) throw new Error(`code exchange answered ${response.status}: ${response.text}`);
  return response.body as unknown as TokenResponse;
}

export function introspect(app: TestApp, client: TestClient, token: string) {
  return postForm(app, '/sso/introspect', { token, ...credentials(client) });
}

export function revoke(app: TestApp, client: TestClient, token: string) {
  return postForm(app, '/sso/revoke', { token, ...credentials(client) });
}

/** RFC 7636: a random verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** SHA-256 of an opaque value, as the service stores codes and refresh tokens. */
export const storedHash = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** The portal user's id (the `sub` of its tokens). */
export async function userId(app: TestApp, user: PortalUser): Promise<string> {
  const [row] = await query<{ id: string }>(app.databaseUrl, 'SELECT id FROM portal_users WHERE username = $1', [user.username]);
  return row.id;
}
