/**
 * Example device, on the device SDK (@voyage-connect/device): signs a user in through the
 * voyage-connect helper flow (polling, or a redirect to its own loopback callback) or through the
 * standard device flow (RFC 8628), then keeps a fresh access token. The SDK does the polling, the
 * PKCE, the refresh before expiry and the waiting out of a restart of the service; the example
 * shows the user where to sign in and what it got.
 *
 *   CLIENT_ID=… CLIENT_SECRET=… npm run example:device -- [--redirect | --device-flow] [--scope …] [--api URL] [--state FILE] [--once]
 */
import { parseArgs, stripVTControlCharacters } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { type DeviceCode, FileStore, MemoryStore, type TokenResponse, UserTokens, VoyageError } from '@voyage-connect/device';
import QRCode from 'qrcode';

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
  --state FILE            keep the user's tokens in FILE: a restart does not ask again
  --once                  after signing in, refresh the token once, show it and exit
  -h, --help              show this help

The access token is refreshed by itself when 60 s or less are left; the example checks once a
minute and says when it changed, until it is stopped.

Environment: CLIENT_ID and CLIENT_SECRET, as printed by
  npm run cli -- client:create --name my-device
`;

const options = parseOptions();
const clientId = required('CLIENT_ID');
const clientSecret = required('CLIENT_SECRET');

try {
  // The part a device maker writes: the token manager, a sign-in unless the user already did, then tokens.accessToken() whenever it calls an API.
  const store = options.state ? new FileStore(options.state) : new MemoryStore();
  // onRetry: while the service is away (restarting, unreachable), say so instead of waiting in silence.
  const onRetry = ({ problem, inMs }: { problem: string; inMs: number }) => console.error(`${problem}; trying again in ${(inMs / 1000).toFixed(1)} s`);
  const tokens = new UserTokens({ api: options.api, clientId, clientSecret, store, onRetry });
  const scope = options.scope ? { scope: options.scope } : {};
  if (await tokens.signedIn()) log(`Signed in already (the tokens in ${options.state}).`);
  else if (options['device-flow']) log(`Signed in: ${describe(await tokens.signInWithDeviceCode({ ...scope, onCode: (code) => void showCode(code) }))}`);
  else log(`Signed in: ${describe(await tokens.signInWithHelper({ ...scope, ...(options.redirect && { redirect: {} }), onAddress: showAddress }))}`);

  if (options.once) log(`Refreshed: access token ${(await tokens.renew()).slice(0, 12)}…`);
  else if (!options['device-flow']) {
    // As a device that calls an API once a minute: the token it is handed is always fresh.
    for (let token = await tokens.accessToken(); ; ) {
      await sleep(60_000);
      const fresh = await tokens.accessToken();
      if (fresh !== token) log(`Refreshed: access token ${fresh.slice(0, 12)}…`);
      token = fresh;
    }
  }
} catch (error) {
  console.error(error instanceof VoyageError ? `${error.message}: ${error.hint}` : String(error));
  process.exit(1);
}

function showAddress(url: string) {
  log(`Open this address in a browser and sign in:\n\n  ${url}\n`);
}

async function showCode({ verificationUri, verificationUriComplete, userCode }: DeviceCode) {
  log(`On a phone or computer, open this address:\n\n  ${verificationUri}\n\nand enter the code:\n\n  ${userCode}\n`);
  if (verificationUriComplete) {
    const drawing = await QRCode.toString(verificationUriComplete, { type: 'terminal', small: true });
    // Its black-on-white colours are terminal escapes: only a terminal shows them; a file or a pipe gets the blocks alone.
    log(`Or scan this QR code (it brings the code along):\n\n${process.stdout.isTTY ? drawing : stripVTControlCharacters(drawing)}`);
  }
  if (/^(localhost|127(\.\d+){3}|\[::1\])$/i.test(new URL(verificationUri).hostname)) {
    log(`note: ${new URL(verificationUri).host} is this machine only: set the service's FRONTEND_URL to an address a phone can reach.`);
  }
}

/** Never the whole token, and never decoded: it is opaque (in relay mode it is the identity provider's own). */
function describe(tokens: TokenResponse): string {
  return `access token ${tokens.access_token.slice(0, 12)}… (expires in ${tokens.expires_in} s, scope ${tokens.scope ?? 'none'})`;
}

function log(line: string) {
  console.log(line);
}

function required(name: string): string {
  const value = process.env[name];
  if (value) return value;
  console.error(`Set ${name} (from: npm run cli -- client:create --name my-device)`);
  process.exit(2);
}

/** The command line, or one line naming what is wrong with it (parseArgs' own error is a stack). */
function parseOptions() {
  let values;
  try {
    values = parseArgs({
      options: {
        // The service's address: as its own settings name it when run beside it (API_URL, PORT).
        api: { type: 'string', default: process.env.VOYAGE_API_URL ?? process.env.API_URL ?? `http://localhost:${process.env.PORT ?? 3000}` },
        redirect: { type: 'boolean', default: false },
        'device-flow': { type: 'boolean', default: false },
        scope: { type: 'string' },
        state: { type: 'string' },
        once: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    console.error(`${(error as Error).message.replace(/\.?$/, '.')} See: npm run example:device -- --help`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  if (values['device-flow'] && values.redirect) {
    console.error('--device-flow and --redirect are two different flows: choose one.');
    process.exit(2);
  }
  return values;
}
