/**
 * Example device: signs a user in through the voyage-connect helper flow and keeps a fresh access
 * token, or through the standard device flow (RFC 8628). Needs only Node (fetch, http, crypto),
 * and the qrcode package for the device flow's QR code (loaded only in that mode): to copy into a
 * device's code base.
 *
 *   CLIENT_ID=… CLIENT_SECRET=… npm run example:device -- [--redirect] [--scope …] [--api URL]
 *   CLIENT_ID=… CLIENT_SECRET=… npm run example:device -- --device-flow [--scope …] [--api URL]
 *
 * Without --redirect it polls code_url every 5 s (the polling flow). With --redirect it listens on
 * 127.0.0.1 and receives the code at its own callback URL (the client must have a matching
 * redirect pattern, e.g. http://127.0.0.0/8:*\/callback), where the browser is shown a page
 * saying the device is signed in, for as long as the example runs. It always uses PKCE (S256).
 *
 * With --device-flow (the client must have the urn:ietf:params:oauth:grant-type:device_code grant)
 * it shows the address, the user code and a QR code for the user to approve on a phone or
 * computer, polls /sso/token as RFC 8628 §3.5 says (each outcome on stderr as `poll: <error>`),
 * prints the access token once approved and exits; 1 if the user denied or the code expired.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs, stripVTControlCharacters } from 'node:util';

interface HelperConfig {
  authorize_url: string;
  code_url: string;
  accesstoken_request_url: string;
}

interface TokenResponse {
  access_token: string;
  expires_in: number;
  token_type: string;
  /** Absent from the device grant's response when the grant has no scope. */
  scope?: string | null;
  refresh_token: string;
}

/** RFC 8628 §3.2. */
interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
}

/** Only a client registered with the refresh_token grant gets a refresh token here. */
type DeviceTokenResponse = Omit<TokenResponse, 'refresh_token'> & { refresh_token?: string };

const POLL_INTERVAL_MS = 5_000;
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 §3.5: what each slow_down adds to the interval. */
const SLOW_DOWN_STEP_MS = 5_000;
const EXPIRED = 'The code expired before it was approved: run again for a new one.';

const USAGE = `Usage: npm run example:device -- [--redirect | --device-flow] [options]

Signs a user in as a device would, and shows the access token it gets.

  (no flow option)        the helper flow: prints a sign-in address, then polls for the code
  --redirect              the helper flow with a callback: receives the code at its own
                          http://127.0.0.1:<port>/callback (the client needs a redirect pattern
                          such as 'http://127.0.0.0/8:*/callback')
  --device-flow           the device flow (RFC 8628): shows a code and a QR code to approve on a
                          phone, waits for the approval and exits
  --scope SCOPES          the scopes to ask for, space-separated
  --api URL               the service's address (default: API_URL, else http://localhost:$PORT,
                          else http://localhost:3000)
  --refresh-margin S      refresh the access token when it has S seconds left (default 60)
  --once                  stop after the first refresh
  -h, --help              show this help

Environment: CLIENT_ID and CLIENT_SECRET, as printed by
  npm run cli -- client:create --name my-device
`;

const options = parseOptions();
if (options.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

if (options['device-flow'] && options.redirect) {
  console.error('--device-flow and --redirect are two different flows: choose one.');
  process.exit(2);
}

const clientId = required('CLIENT_ID');
const clientSecret = required('CLIENT_SECRET');

async function main() {
  if (options['device-flow']) return deviceFlow();
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const callback = options.redirect ? await startCallbackListener() : undefined;

  const configUrl = new URL(`/external/oauth2helper/config/${encodeURIComponent(clientId)}`, options.api);
  configUrl.searchParams.set('code_challenge', challenge);
  configUrl.searchParams.set('code_challenge_method', 'S256');
  if (callback) configUrl.searchParams.set('redirect_url', callback.url);
  const config = await json<HelperConfig>(await request(configUrl, { method: 'POST' }), 'helper configuration');

  log(`Open this address in a browser and sign in:\n\n  ${config.authorize_url}\n`);
  const code = callback ? await callback.code : await pollForCode(config.code_url);
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

/** The helper flow's code poll (code_url): 404 until the user has signed in, 200 with the code once, 429 when too fast. */
async function pollForCode(codeUrl: string): Promise<string> {
  for (;;) {
    const response = await request(codeUrl);
    if (response.status === 200) return ((await response.json()) as { code: string }).code;
    if (response.status === 429) {
      await sleep(Number(response.headers.get('retry-after') ?? 5) * 1000);
      continue;
    }
    if (response.status !== 404) throw new Error(`polling failed: ${response.status} ${await response.text()}`);
    await sleep(POLL_INTERVAL_MS);
  }
}

/** RFC 8628: the user approves on another device; this one only shows where and polls. */
async function deviceFlow() {
  const authorization = await json<DeviceAuthorization>(
    await postWithClient(new URL('/sso/device_authorization', options.api), options.scope ? { scope: options.scope } : {}),
    'device authorization',
  );
  log(`On a phone or computer, open this address:\n\n  ${authorization.verification_uri}\n\nand enter the code:\n\n  ${authorization.user_code}\n`);
  if (authorization.verification_uri_complete) {
    const { default: QRCode } = await import('qrcode');
    const drawing = await QRCode.toString(authorization.verification_uri_complete, { type: 'terminal', small: true });
    // Its black-on-white colours are terminal escapes: only a terminal shows them; a file or a pipe gets the blocks alone.
    const qr = process.stdout.isTTY ? drawing : stripVTControlCharacters(drawing);
    log(`Or scan this QR code (it brings the code along):\n\n${qr}`);
  }
  const tokens = await pollForDeviceTokens(authorization);
  log('Approved.');
  describe(tokens);
}

/** RFC 8628 §3.5: one poll per interval, 5 s longer for good after each slow_down, until the code expires. */
async function pollForDeviceTokens({ device_code, expires_in, interval }: DeviceAuthorization): Promise<DeviceTokenResponse> {
  const tokenUrl = new URL('/sso/token', options.api);
  const deadline = Date.now() + expires_in * 1000;
  let intervalMs = interval === undefined ? POLL_INTERVAL_MS : interval * 1000;
  for (;;) {
    await sleep(intervalMs);
    if (Date.now() >= deadline) throw new Error(EXPIRED);
    const response = await postWithClient(tokenUrl, { grant_type: DEVICE_GRANT, device_code });
    const body = await response.text();
    if (response.ok) return JSON.parse(body) as DeviceTokenResponse;
    const error = oauthError(body) ?? String(response.status);
    if (error === 'slow_down') intervalMs += SLOW_DOWN_STEP_MS;
    const again = error === 'authorization_pending' || error === 'slow_down';
    console.error(`poll: ${error}${again ? `; next in ${intervalMs / 1000} s` : ''}`);
    if (again) continue;
    if (error === 'access_denied') throw new Error('Access was denied: the user declined on the verification page.');
    if (error === 'expired_token') throw new Error(EXPIRED);
    throw new Error(`token request failed: ${response.status} ${body}`);
  }
}

/** The `error` of an RFC 6749 §5.2 error response, if the body is one. */
function oauthError(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { error?: string }).error;
  } catch {
    return undefined;
  }
}

/**
 * A tiny listener on the loopback address: the browser brings the code to it after sign-in. It
 * answers the browser with a page for as long as the example runs (a refresh brings the same code
 * again, which is not used twice), without keeping the example running.
 */
async function startCallbackListener() {
  let deliver: (code: string) => void;
  const code = new Promise<string>((resolve) => (deliver = resolve));
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const received = url.pathname === '/callback' ? url.searchParams.get('code') : null;
    // Connection: close, so that no idle browser connection keeps the example running once it is done.
    response.writeHead(received ? 200 : 404, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', connection: 'close' });
    response.end(
      received
        ? callbackPage('Your device is signed in', 'You can close this window: the device carries on by itself.')
        : callbackPage('Nothing here', 'This address only receives sign-ins for the device.'),
    );
    if (!received) return;
    deliver(received);
    // Still answering, but no longer what keeps the example running.
    server.unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/callback`, code };
}

/** A page in the look of the service's own pages (src/common/html/page-layout.ts), readable on a phone. */
function callbackPage(title: string, message: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>
:root { color-scheme: light dark; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; display: grid; place-items: center; min-height: 100vh; padding: 1rem; box-sizing: border-box; }
main { width: 100%; max-width: 24rem; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
p { margin: 0 0 1rem; }
</style>
</head>
<body>
<main>
<h1>${title}</h1>
<p>${message}</p>
</main>
</body>
</html>
`;
}

/** The token request at accesstoken_request_url, authenticated with client_secret_post. */
async function requestTokens(tokenUrl: string, grant: Record<string, string>): Promise<TokenResponse> {
  return json<TokenResponse>(await postWithClient(tokenUrl, grant), 'token request');
}

/** A form POST authenticated with client_secret_post. */
function postWithClient(url: string | URL, fields: Record<string, string>): Promise<Response> {
  return request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...fields, client_id: clientId, client_secret: clientSecret }),
  });
}

/** fetch, with the address in the error when the service cannot be reached (fetch says only "fetch failed"). */
async function request(url: string | URL, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause?.message ?? (error as Error).message;
    throw new Error(`cannot reach ${new URL(url).origin} (${cause}): is the service running there? (--api, or API_URL / PORT)`);
  }
}

async function json<T>(response: Response, what: string): Promise<T> {
  const body = await response.text();
  if (!response.ok) throw new Error(`${what} failed: ${response.status} ${body}`);
  return JSON.parse(body) as T;
}

/** Never prints a whole token: enough to recognise it, not enough to use it. */
function describe(tokens: DeviceTokenResponse) {
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

/** The command line, or one line naming what is wrong with it (parseArgs' own error is a stack). */
function parseOptions() {
  try {
    return parseArgs({
      options: {
        // The service's address: as its own settings name it when run beside it (API_URL, PORT).
        api: { type: 'string', default: process.env.VOYAGE_API_URL ?? process.env.API_URL ?? `http://localhost:${process.env.PORT ?? 3000}` },
        redirect: { type: 'boolean', default: false },
        'device-flow': { type: 'boolean', default: false },
        scope: { type: 'string' },
        // Refresh when the access token has this many seconds left.
        'refresh-margin': { type: 'string', default: '60' },
        // Stop after the first refresh (for demos and tests); otherwise keep refreshing forever.
        once: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    console.error(`${(error as Error).message.replace(/\.?$/, '.')} See: npm run example:device -- --help`);
    process.exit(2);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line: string) => console.log(line);

main().catch((error) => {
  console.error((error as Error).message);
  process.exit(1);
});
