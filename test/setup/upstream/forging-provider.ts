import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { freePort } from '../free-port.js';

// FOR NEGATIVE CASES ONLY: an "OpenID provider" that signs whatever the test tells it to, so a
// relying party's checks of the ID token (signature, iss, aud, azp, exp, iat, nonce) and of the
// token endpoint's errors can each be tried alone. It checks nothing it is sent: no client
// authentication, no PKCE, no redirect_uri. Positive cases use the real provider
// (upstream-provider.ts).

/** What the token endpoint answers (until the next set()); every field left out is correct. */
export interface ForgedAnswer {
  iss?: string;
  aud?: string | string[];
  azp?: string;
  sub?: string;
  /** Replaces the nonce of the authorization request; null leaves it out. */
  nonce?: string | null;
  expSecondsFromNow?: number;
  iatSecondsFromNow?: number;
  /** Signs with a key the JWKS does not publish (and a kid it does not know). */
  signWithUnknownKey?: boolean;
  omitIdToken?: boolean;
  /** Answers this status (and `error`) instead of tokens: 500, or 400 with invalid_grant… */
  status?: number;
  error?: string;
  /** More claims for the ID token and userinfo (name, preferred_username, email…). */
  claims?: Record<string, unknown>;
  /** The `iss` of the authorization response (RFC 9207) instead of its own issuer. */
  authorizationIss?: string;
}

export interface ForgingProvider {
  issuer: string;
  set(next: ForgedAnswer): void;
  /** Signs from now on with a new key, published beside the old one (a provider's key rotation). */
  rotateKey(): Promise<void>;
  jwksRequests(): number;
  /** JWKS requests are counted as they arrive but answered only once the returned function is called. */
  holdJwks(): () => void;
  tokenRequests(): number;
  close(): Promise<void>;
}

interface SigningKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function newSigningKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' } };
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  let body = '';
  for await (const chunk of request) body += chunk;
  return new URLSearchParams(body);
}

function sendJson(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
}

/**
 * Starts the forging provider on 127.0.0.1. Its authorization endpoint sends the browser straight
 * back with a code, the state and (unless `issInAuthorizationResponse` is false) `iss`.
 */
export async function startForgingProvider(options: { issInAuthorizationResponse?: boolean } = {}): Promise<ForgingProvider> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const withIss = options.issInAuthorizationResponse ?? true;
  const published: SigningKey[] = [await newSigningKey()];
  const unknownKey = await newSigningKey();
  const codes = new Map<string, { clientId: string; nonce: string | null }>();
  let next: ForgedAnswer = {};
  let jwksCount = 0;
  let jwksHeld: Promise<void> | undefined;
  let tokenCount = 0;

  const discovery = {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    userinfo_endpoint: `${issuer}/userinfo`,
    jwks_uri: `${issuer}/jwks`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    authorization_response_iss_parameter_supported: withIss,
  };

  function authorize(url: URL, response: ServerResponse) {
    const code = randomBytes(16).toString('base64url');
    codes.set(code, { clientId: url.searchParams.get('client_id') ?? '', nonce: url.searchParams.get('nonce') });
    const back = new URL(url.searchParams.get('redirect_uri') ?? '');
    back.searchParams.set('code', code);
    if (url.searchParams.has('state')) back.searchParams.set('state', url.searchParams.get('state')!);
    if (withIss) back.searchParams.set('iss', next.authorizationIss ?? issuer);
    response.writeHead(302, { location: back.href }).end();
  }

  /** The client is whoever the code was issued to, else whoever authenticates (basic or post). */
  function clientIdOf(request: IncomingMessage, form: URLSearchParams, issued?: { clientId: string }): string {
    if (issued) return issued.clientId;
    const basic = /^Basic (.+)$/.exec(request.headers.authorization ?? '');
    if (basic) return decodeURIComponent(Buffer.from(basic[1], 'base64').toString().split(':')[0]);
    return form.get('client_id') ?? '';
  }

  async function token(request: IncomingMessage, response: ServerResponse) {
    tokenCount += 1;
    const form = await readForm(request);
    if (next.status !== undefined || next.error !== undefined) {
      const status = next.status ?? 400;
      return sendJson(response, status, { error: next.error ?? (status >= 500 ? 'server_error' : 'invalid_request') });
    }
    const issued = form.get('grant_type') === 'authorization_code' ? codes.get(form.get('code') ?? '') : undefined;
    const clientId = clientIdOf(request, form, issued);
    const now = Math.floor(Date.now() / 1000);
    const nonce = next.nonce !== undefined ? next.nonce : (issued?.nonce ?? null);
    const key = next.signWithUnknownKey ? unknownKey : published.at(-1)!;
    const idToken = await new SignJWT({
      ...next.claims,
      ...(nonce !== null ? { nonce } : {}),
      ...(next.azp !== undefined ? { azp: next.azp } : {}),
    })
      .setProtectedHeader({ alg: 'RS256', kid: key.publicJwk.kid })
      .setIssuer(next.iss ?? issuer)
      .setSubject(next.sub ?? 'forged-subject')
      .setAudience(next.aud ?? clientId)
      .setIssuedAt(now + (next.iatSecondsFromNow ?? 0))
      .setExpirationTime(now + (next.expSecondsFromNow ?? 300))
      .sign(key.privateKey);
    sendJson(response, 200, {
      access_token: randomBytes(16).toString('base64url'),
      token_type: 'Bearer',
      expires_in: 300,
      refresh_token: randomBytes(16).toString('base64url'),
      scope: 'openid profile email offline_access',
      ...(next.omitIdToken ? {} : { id_token: idToken }),
    });
  }

  const server = createServer((request, response) => {
    const url = new URL(request.url!, issuer);
    const route = `${request.method} ${url.pathname}`;
    if (route === 'GET /.well-known/openid-configuration') return sendJson(response, 200, discovery);
    if (route === 'GET /jwks') {
      jwksCount += 1;
      const answer = () => sendJson(response, 200, { keys: published.map((key) => key.publicJwk) });
      return void (jwksHeld ? jwksHeld.then(answer) : answer());
    }
    if (route === 'GET /authorize') return authorize(url, response);
    if (route === 'POST /token') {
      return void token(request, response).catch((error: Error) => sendJson(response, 500, { error: 'server_error', error_description: error.message }));
    }
    if (url.pathname === '/userinfo') return sendJson(response, 200, { sub: next.sub ?? 'forged-subject', ...next.claims });
    sendJson(response, 404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

  return {
    issuer,
    set: (answer) => void (next = answer),
    async rotateKey() {
      published.push(await newSigningKey());
    },
    jwksRequests: () => jwksCount,
    holdJwks() {
      let release!: () => void;
      jwksHeld = new Promise((resolve) => (release = resolve));
      return () => {
        jwksHeld = undefined;
        release();
      };
    },
    tokenRequests: () => tokenCount,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
