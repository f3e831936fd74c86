/**
 * Example subscriber for the report notification stream, on the device SDK
 * (@voyage-connect/device): it prints each notification, and the SDK does the rest. It gets a
 * client-credentials token for each connection, reconnects by the service's rules, confirms a
 * notification only once it was printed, and with --state FILE resumes after a restart without
 * printing anything twice.
 *
 *   CLIENT_ID=… CLIENT_SECRET=… npm run example:subscriber -- [--api URL] [--protocol v1|v2|auto | --sse] [--state FILE]
 */
import { parseArgs } from 'node:util';
import { ClientCredentials, FileStore, MemoryStore, Subscriber, VoyageError } from '@voyage-connect/device';

const USAGE = `Usage: npm run example:subscriber -- [options]

Receives the report notifications published to this client, as a device would: prints each one,
and reconnects after a close (with a new token when the old one expired).

  --api URL               the service's address (default: API_URL, else http://localhost:$PORT,
                          else http://localhost:3000)
  --protocol v1|v2|auto   the WebSocket protocol (default v1, the original): v2 confirms each
                          notification, resumes where it was and replaces its token without
                          reconnecting; auto is v2, then server-sent events if a proxy refuses it
  --sse                   server-sent events instead of WebSocket, for proxies that refuse it
  --state FILE            keep the token and the place in the stream in FILE: a restart goes on
                          after the last notification printed (v2, auto and --sse)
  --scope SCOPES          the scopes to ask for, space-separated (default: the service's
                          DEFAULT_CLIENT_SCOPE, notification:subscribe)
  -h, --help              show this help

Environment: CLIENT_ID and CLIENT_SECRET, as printed by
  npm run cli -- client:create --name my-subscriber --grant client_credentials
`;

const options = parseOptions();
const clientId = required('CLIENT_ID');
const clientSecret = required('CLIENT_SECRET');

// The part a device maker writes: a token source, the stream, and what to do with each notification.
const { api, scope } = options;
const store = options.state ? new FileStore(options.state) : new MemoryStore();
const onRetry = ({ problem, inMs }: { problem: string; inMs: number }) => log(`${problem}; trying again in ${(inMs / 1000).toFixed(1)} s`);
const tokens = new ClientCredentials({ api, clientId, clientSecret, store, onRetry, ...(scope && { scope }) });
const subscriber = new Subscriber({ api, tokens, store, transport: options.sse ? 'sse' : (options.protocol as 'v1' | 'v2' | 'auto') });
subscriber.on('connected', ({ transport }) => log(transport === 'sse' ? 'connected (server-sent events)' : `connected (protocol ${transport})`));
subscriber.on('reconnecting', ({ inMs, why }) => log(`${why}; reconnecting in ${(inMs / 1000).toFixed(1)} s`));
// Stopped (Ctrl-C, a supervisor's SIGTERM): the notification in hand is finished and confirmed, the
// loop ends, and the example exits 0; after 2 s it exits anyway (close() waits for a token request
// that is still retrying an unreachable service).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void subscriber.close();
    setTimeout(() => process.exit(0), 2_000).unref();
  });
}
log(`subscribing at ${api}`);

try {
  for await (const delivery of subscriber) {
    // A real device would resynchronise on a reset, e.g. from GET /voyage/notification/v1/notifications.
    if ('reset' in delivery) log(`history incomplete (${delivery.reset}): what follows is what remains`);
    else log(`notification ${JSON.stringify(delivery.notification)}`);
  }
} catch (error) {
  // What no reconnect mends: a wrong secret, a missing scope.
  console.error(error instanceof VoyageError ? `${error.message}: ${error.hint}` : String(error));
  process.exit(1);
}

function log(line: string) {
  console.log(`${new Date().toISOString()} ${line}`);
}

function required(name: string): string {
  const value = process.env[name];
  if (value) return value;
  console.error(`Set ${name} (from: npm run cli -- client:create --name my-subscriber --grant client_credentials)`);
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
        protocol: { type: 'string', default: 'v1' },
        sse: { type: 'boolean', default: false },
        state: { type: 'string' },
        scope: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    console.error(`${(error as Error).message.replace(/\.?$/, '.')} See: npm run example:subscriber -- --help`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  if (!['v1', 'v2', 'auto'].includes(values.protocol) || (values.sse && values.protocol !== 'v1')) {
    console.error('--protocol is v1, v2 or auto, and --sse takes no --protocol. See: npm run example:subscriber -- --help');
    process.exit(2);
  }
  return values;
}
