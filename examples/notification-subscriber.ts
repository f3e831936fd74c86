/**
 * Example subscriber for the report notification stream, behaving as a client of the
 * notification service should:
 * - a fresh client-credentials token before every connection attempt;
 * - each message parsed as JSON, else treated as raw text;
 * - after a close or a failure, reconnect after 5 s (plus up to 1 s of jitter, so a fleet does
 *   not reconnect in lockstep after a restart);
 * - on 4003 (token expired): a new token, then reconnect after 1 s.
 *
 *   CLIENT_ID=… CLIENT_SECRET=… npm run example:subscriber -- [--api URL]
 */
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const TOKEN_EXPIRED = 4003;

const USAGE = `Usage: npm run example:subscriber -- [options]

Receives the report notifications published to this client, as a device would: prints each one,
and reconnects after a close (with a new token when the old one expired).

  --api URL               the service's address (default: API_URL, else http://localhost:$PORT,
                          else http://localhost:3000)
  --identity URL          where to get tokens, if not at --api
  --ws URL                where the stream is, if not at --api (ws:// or wss://)
  --scope SCOPES          the scopes to ask for, space-separated (default: the service's
                          DEFAULT_CLIENT_SCOPE, notification:subscribe)
  --reconnect-delay S     seconds to wait before reconnecting (default 5, plus up to 1 s)
  -h, --help              show this help

Environment: CLIENT_ID and CLIENT_SECRET, as printed by
  npm run cli -- client:create --name my-subscriber --grant client_credentials
`;

const options = parseOptions();
if (options.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

const clientId = required('CLIENT_ID');
const clientSecret = required('CLIENT_SECRET');
const identityUrl = options.identity ?? options.api;
const streamUrl = `${options.ws ?? options.api.replace(/^http/, 'ws')}/voyage/notification/v1/ws/products`;

/** A client-credentials token, the credentials in the form body. */
async function fetchToken(): Promise<string> {
  const tokenUrl = `${identityUrl}/public/api/oauth2/token`;
  const response = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
      ...(options.scope ? { scope: options.scope } : {}),
    }),
  }).catch((error: Error & { cause?: Error }) => {
    // fetch says only "fetch failed": name the address.
    throw new Error(`cannot reach ${new URL(tokenUrl).origin} (${error.cause?.message ?? error.message}): is the service running there? (--api, or API_URL / PORT)`);
  });
  const body = (await response.json().catch(() => ({}))) as { access_token?: string; error?: string };
  if (response.status !== 200 || !body.access_token) throw new Error(`token request failed: ${response.status} ${body.error ?? ''}`.trim());
  return body.access_token;
}

async function connect(): Promise<void> {
  let token: string;
  try {
    token = await fetchToken();
  } catch (error) {
    log(`${(error as Error).message}`);
    return reconnect(reconnectDelayMs());
  }
  const socket = new WebSocket(streamUrl, { headers: { Authorization: `Bearer ${token}` } });
  socket.on('open', () => log('connected'));
  socket.on('message', (data, isBinary) => {
    const text = isBinary ? `<${(data as Buffer).length} binary bytes>` : data.toString();
    try {
      log(`notification ${JSON.stringify(JSON.parse(text))}`);
    } catch {
      log(`message ${text}`);
    }
  });
  socket.on('unexpected-response', (_request, response) => {
    log(`connection refused: HTTP ${response.statusCode}`);
    socket.terminate();
  });
  socket.on('error', (error) => log(`connection error: ${error.message}`));
  socket.on('close', (code, reason) => {
    if (code === TOKEN_EXPIRED) {
      log(`closed ${code} (token expired): new token, reconnecting in 1 s`);
      return reconnect(1000);
    }
    const delay = reconnectDelayMs();
    log(`closed ${code}${reason.length ? ` (${reason})` : ''}: reconnecting in ${(delay / 1000).toFixed(1)} s`);
    reconnect(delay);
  });
}

function reconnect(delayMs: number) {
  setTimeout(() => void connect(), delayMs);
}

const reconnectDelayMs = () => Number(options['reconnect-delay']) * 1000 + Math.random() * 1000;

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`Set ${name} (from: npm run cli -- client:create --name my-subscriber --grant client_credentials)`);
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
        // {identity_url} and {ws_url} default to the API address.
        identity: { type: 'string' },
        ws: { type: 'string' },
        scope: { type: 'string' },
        'reconnect-delay': { type: 'string', default: '5' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    console.error(`${(error as Error).message.replace(/\.?$/, '.')} See: npm run example:subscriber -- --help`);
    process.exit(2);
  }
}

const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);

void connect();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
