/**
 * Example device: signs a user in through the voyage-connect helper (seed 000) and keeps a fresh
 * access token. Dependency-free (Node 20 fetch, http, crypto), to copy into a device's code base.
 *
 *   CLIENT_ID=… CLIENT_SECRET=… npx tsx examples/device-client.ts [--redirect] [--api http://localhost:3000]
 *
 * Without --redirect it polls code_url every 5 s (the polling flow). With --redirect it listens on
 * 127.0.0.1 and receives the code at its own callback URL (the client must have a matching
 * redirect pattern, e.g. http://127.0.0.0/8:*\/callback). It always uses PKCE (S256).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

interface HelperConfig {
  authorize_url: string;
  code_url: string;
  accesstoken_request_url: string;
}

interface TokenResponse {
  access_token: string;
  expires_in: number;
  token_type: string;
  scope: string | null;
  refresh_token: string;
}

const POLL_INTERVAL_MS = 5_000;

const { values: options } = parseArgs({
  options: {
    api: { type: 'string', default: process.env.VOYAGE_API_URL ?? 'http://localhost:3000' },
    redirect: { type: 'boolean', default: false },
    scope: { type: 'string' },
    // Refresh when the access token has this many seconds left.
    'refresh-margin': { type: 'string', default: '60' },
    // Stop after the first refresh (for demos and tests); otherwise keep refreshing forever.
    once: { type: 'boolean', default: false },
  },
});

const clientId = required('CLIENT_ID');
const clientSecret = required('CLIENT_SECRET');

async function main() {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const callback = options.redirect ? await startCallbackListener() : undefined;

  const configUrl = new URL(`/external/oauth2helper/config/${encodeURIComponent(clientId)}`, options.api);
  configUrl.searchParams.set('code_challenge', challenge);
  configUrl.searchParams.set('code_challenge_method', 'S256');
  if (callback) configUrl.searchParams.set('redirect_url', callback.url);
  const config = await json<HelperConfig>(await fetch(configUrl, { method: 'POST' }), 'helper configuration');

  log(`Open this address in a browser and sign in:\n\n  ${config.authorize_url}\n`);
  const code = callback ? await callback.code : await pollForCode(config.code_url);
  callback?.close();
  log('Signed in: exchanging the code for tokens.');

  let tokens = await requestTokens(config.accesstoken_request_url, { grant_type: 'authorization_code', code, code_verifier: verifier, ...(options.scope ? { scope: options.scope } : {}) });
  describe(tokens);
  for (;;) {
    const waitSeconds = Math.max(tokens.expires_in - Number(options['refresh-margin']), 0);
    log(`Next refresh in ${waitSeconds} s.`);
    await sleep(waitSeconds * 1000);
    tokens = await requestTokens(config.accesstoken_request_url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    log('Refreshed.');
    describe(tokens);
    if (options.once) return;
  }
}

/** Endpoint 2: 404 until the user has signed in, 200 with the code once, 429 when too fast. */
async function pollForCode(codeUrl: string): Promise<string> {
  for (;;) {
    const response = await fetch(codeUrl);
    if (response.status === 200) return ((await response.json()) as { code: string }).code;
    if (response.status === 429) {
      await sleep(Number(response.headers.get('retry-after') ?? 5) * 1000);
      continue;
    }
    if (response.status !== 404) throw new Error(`polling failed: ${response.status} ${await response.text()}`);
    await sleep(POLL_INTERVAL_MS);
  }
}

/** A tiny listener on the loopback address: the browser brings the code to it after sign-in. */
async function startCallbackListener() {
  let deliver: (code: string) => void;
  const code = new Promise<string>((resolve) => (deliver = resolve));
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const received = url.pathname === '/callback' ? url.searchParams.get('code') : null;
    response.writeHead(received ? 200 : 404, { 'content-type': 'text/plain; charset=utf-8' });
    response.end(received ? 'Signed in. You can close this window.' : 'Not found');
    if (received) deliver(received);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/callback`, code, close: () => server.close() };
}

/** Endpoint 3 with client_secret_post, as the seed describes. */
async function requestTokens(tokenUrl: string, grant: Record<string, string>): Promise<TokenResponse> {
  const response = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...grant, client_id: clientId, client_secret: clientSecret }),
  });
  return json<TokenResponse>(response, 'token request');
}

async function json<T>(response: Response, what: string): Promise<T> {
  const body = await response.text();
  if (!response.ok) throw new Error(`${what} failed: ${response.status} ${body}`);
  return JSON.parse(body) as T;
}

/** Never prints a whole token: enough to recognise it, not enough to use it. */
function describe(tokens: TokenResponse) {
  const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url').toString());
  log(`Access token for ${claims.sub} (scope ${tokens.scope ?? 'none'}), expires in ${tokens.expires_in} s: ${tokens.access_token.slice(0, 12)}…`);
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`Set ${name} (from: npm run cli -- client:create --name my-device)`);
    process.exit(2);
  }
  return value;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line: string) => console.log(line);

main().catch((error) => {
  console.error((error as Error).message);
  process.exit(1);
});
