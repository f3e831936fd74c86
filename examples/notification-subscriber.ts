/**
 * Example subscriber for the report notification stream, behaving as a client of the
 * notification service should, in any of its three forms:
 * - the seed's WebSocket stream (default): a fresh client-credentials token before every
 *   connection attempt; on 4003 (token expired) a new token, then reconnect after 1 s;
 * - protocol v2 (`--protocol v2`): acks each notification once printed, resumes after the last
 *   one it printed (`after`, `epoch`), replaces its token in band when told it is expiring, and
 *   says so when the service reports its history incomplete (`reset`);
 * - server-sent events (`--sse`), for networks whose proxies refuse WebSocket: an EventSource
 *   that resumes with Last-Event-ID by itself, with a fresh token on every (re)connection.
 * After a close or a failure it reconnects after 5 s (plus up to 1 s of jitter, so a fleet does
 * not reconnect in lockstep after a restart).
 *
 *   CLIENT_ID=… CLIENT_SECRET=… npm run example:subscriber -- [--api URL] [--protocol v2 | --sse]
 */
import { parseArgs } from 'node:util';
import { EventSource } from 'eventsource';
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
  --protocol v1|v2        the WebSocket protocol (default v1, the seed's): v2 acknowledges,
                          resumes where it was and refreshes its token without reconnecting
  --sse                   server-sent events instead of WebSocket, for proxies that refuse it
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

if (!['v1', 'v2'].includes(options.protocol) || (options.sse && options.protocol !== 'v1')) {
  console.error('--protocol is v1 or v2, and --sse takes no --protocol. See: npm run example:subscriber -- --help');
  process.exit(2);
}

const clientId = required('CLIENT_ID');
const clientSecret = required('CLIENT_SECRET');
const identityUrl = options.identity ?? options.api;
const streamUrl = `${options.ws ?? options.api.replace(/^http/, 'ws')}/voyage/notification/v1/ws/products`;
const eventsUrl = `${options.api}/voyage/notification/v1/sse/products`;

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

/** Protocol v2: where this client is (the last notification it printed), kept across reconnects. */
const position: { seq?: number; epoch?: string } = {};

async function connect(): Promise<void> {
  let token: string;
  try {
    token = await fetchToken();
  } catch (error) {
    log(`${(error as Error).message}`);
    return reconnect(reconnectDelayMs());
  }
  const v2 = options.protocol === 'v2';
  const resume = v2 && position.seq !== undefined ? `?${new URLSearchParams({ after: String(position.seq), epoch: position.epoch ?? '' })}` : '';
  const socket = new WebSocket(`${streamUrl}${resume}`, v2 ? ['voyage.v2'] : [], {
    headers: { Authorization: `Bearer ${token}` },
    // Offers permessage-deflate, and compresses what it sends from 128 bytes (ws's default is 1 KiB): the token message, not an ack.
    perMessageDeflate: { threshold: 128 },
  });
  socket.on('open', () => log(v2 ? 'connected (protocol v2)' : 'connected'));
  socket.on('message', (data, isBinary) => {
    const text = isBinary ? `<${(data as Buffer).length} binary bytes>` : data.toString();
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return log(`message ${text}`);
    }
    if (v2) return void onV2Message(socket, message as V2Message);
    log(`notification ${JSON.stringify(message)}`);
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

interface V2Message {
  type: string;
  seq?: number;
  epoch?: string;
  data?: unknown;
  reason?: string;
  in?: number;
}

async function onV2Message(socket: WebSocket, message: V2Message): Promise<void> {
  switch (message.type) {
    case 'notification':
      log(`notification ${JSON.stringify(message.data)}`);
      // Printed, so processed: confirmed, and the position to resume from.
      [position.seq, position.epoch] = [message.seq, message.epoch];
      socket.send(JSON.stringify({ type: 'ack', seq: message.seq }));
      return;
    case 'reset':
      // A real device would resynchronise here, e.g. from GET /voyage/notification/v1/notifications.
      return log(`history incomplete (${message.reason}): what follows is what remains`);
    case 'expiring':
      try {
        socket.send(JSON.stringify({ type: 'token', access_token: await fetchToken() }));
        log(`token expiring in ${message.in} s: replaced`);
      } catch (error) {
        log(`token expiring in ${message.in} s, and a new one failed: ${(error as Error).message}`);
      }
      return;
    default:
      return; // later versions may add types
  }
}

/** Server-sent events: the id of the last notification printed, for a new EventSource after one gave up. */
let lastEventId: string | undefined;

/** Server-sent events: EventSource reconnects by itself, sending Last-Event-ID; each attempt gets a fresh token. */
function listen(): void {
  const source = new EventSource(eventsUrl, {
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers as ConstructorParameters<typeof Headers>[0]);
      headers.set('Authorization', `Bearer ${await fetchToken()}`);
      if (!headers.has('Last-Event-ID') && lastEventId !== undefined) headers.set('Last-Event-ID', lastEventId);
      return fetch(input, { ...init, headers });
    },
  });
  source.addEventListener('open', () => log('connected (server-sent events)'));
  source.addEventListener('notification', (event) => {
    log(`notification ${event.data}`);
    lastEventId = event.lastEventId;
  });
  source.addEventListener('reset', (event) => log(`history incomplete (${(JSON.parse(event.data) as { reason: string }).reason}): what follows is what remains`));
  source.addEventListener('token-expired', () => log('token expired: reconnecting with a new one'));
  source.addEventListener('shutdown', () => log('server shutting down: reconnecting'));
  source.addEventListener('error', (event) => {
    const code = (event as { code?: number }).code;
    // EventSource gives up on an answer other than 200 (401, 503…): start again after the delay.
    if (source.readyState !== EventSource.CLOSED) return;
    const delay = reconnectDelayMs();
    log(`stream refused${code ? `: HTTP ${code}` : ''}: reconnecting in ${(delay / 1000).toFixed(1)} s`);
    setTimeout(listen, delay);
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
        protocol: { type: 'string', default: 'v1' },
        sse: { type: 'boolean', default: false },
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

if (options.sse) {
  listen();
  // EventSource's reconnect timer does not keep Node running: between a stream's end and the next one, this does.
  setInterval(() => {}, 2 ** 31 - 1);
} else void connect();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
