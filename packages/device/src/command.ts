#!/usr/bin/env node
/**
 * voyage-connect-device: the SDK as a command, for people testing a ship's connectivity and for
 * scripts. stdout: one JSON object per line; stderr: one line per step or problem.
 */
import { parseArgs, stripVTControlCharacters } from 'node:util';
import { renderUnicodeCompact } from 'uqr';
import { ClientCredentials } from './client-credentials.js';
import { VoyageError } from './errors.js';
import { FileStore, MemoryStore } from './stores.js';
import { Subscriber, type Transport } from './subscriber.js';
import { UserTokens } from './user-tokens.js';

const USAGE = `Usage:
  voyage-connect-device subscribe --api URL --client-id ID [--transport auto|v2|sse|v1] [--state FILE] [--scope S]
  voyage-connect-device sign-in --api URL --client-id ID [--redirect-port P] [--redirect-host H] [--scope S] [--state FILE]

The client secret is read from VOYAGE_CLIENT_SECRET (unset: a public client).
subscribe prints each notification as {"seq":N,"notification":{…}} (v1: no seq), a reset as
{"reset":"retention"|"epoch"}; with --state FILE a restart resumes where it stopped.
sign-in prints where to sign in (and a QR code at a terminal) on stderr, then the tokens on stdout.
`;

const TRANSPORTS: readonly Transport[] = ['auto', 'v2', 'sse', 'v1'];

class UsageError extends Error {}

const say = (line: string) => process.stderr.write(`${line}\n`);
const onRetry = ({ problem, inMs }: { problem: string; inMs: number }) => say(`${problem}; trying again in ${(inMs / 1000).toFixed(1)} s`);
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  const { values } = readOptions(rest);
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!values.api || !values['client-id']) throw new UsageError('--api and --client-id are required');
  const api = checkedUrl(values.api);
  const clientId = values['client-id'];
  const clientSecret = process.env.VOYAGE_CLIENT_SECRET || undefined;
  const store = values.state ? new FileStore(values.state) : new MemoryStore();
  if (command === 'subscribe') {
    const transport = (values.transport ?? 'auto') as Transport;
    if (!TRANSPORTS.includes(transport)) throw new UsageError(`--transport is one of ${TRANSPORTS.join(', ')}`);
    if (!clientSecret) throw new UsageError('subscribe needs the client secret in VOYAGE_CLIENT_SECRET');
    return subscribe(api, new ClientCredentials({ api, clientId, clientSecret, store, onRetry, ...(values.scope && { scope: values.scope }) }), transport, store);
  }
  if (command === 'sign-in') {
    const port = values['redirect-port'] === undefined ? undefined : Number(values['redirect-port']);
    if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) throw new UsageError('--redirect-port is a port number (0: any free one)');
    return signIn(new UserTokens({ api, clientId, ...(clientSecret && { clientSecret }), store, onRetry }), {
      ...(port !== undefined && { redirect: { port, host: values['redirect-host'] ?? '127.0.0.1' } }),
      ...(values.scope && { scope: values.scope }),
    });
  }
  throw new UsageError(`unknown command ${JSON.stringify(command)}: subscribe or sign-in`);
}

async function subscribe(api: string, tokens: ClientCredentials, transport: Transport, store: FileStore | MemoryStore): Promise<number> {
  const subscriber = new Subscriber({ api, tokens, transport, store });
  subscriber.on('connected', ({ transport: using }) => say(`connected (${using === 'sse' ? 'server-sent events' : `protocol ${using}`})`));
  subscriber.on('reconnecting', ({ inMs, why }) => say(`${why}; reconnecting in ${(inMs / 1000).toFixed(1)} s`));
  subscriber.on('error', (error) => say(error.message));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void subscriber.close());
  for await (const delivery of subscriber) print(delivery);
  return 0;
}

async function signIn(tokens: UserTokens, options: { redirect?: { port: number; host: string }; scope?: string }): Promise<number> {
  const response = await tokens.signInWithHelper({
    ...options,
    onAddress: (url) => {
      say(`Open this address in a browser and sign in: ${url}`);
      if (process.stderr.isTTY) say(renderUnicodeCompact(url));
      warnIfLocal(url, options.redirect?.host);
    },
  });
  print({ access_token: response.access_token, refresh_token: response.refresh_token, expires_in: response.expires_in, scope: response.scope ?? null });
  return 0;
}

const LOCAL_HOSTS = /^(localhost|127(\.\d+){3}|\[::1\])$/i;

/** A phone cannot open an address that names the machine the service runs on. */
function warnIfLocal(address: string, redirectHost: string | undefined) {
  if (LOCAL_HOSTS.test(new URL(address).hostname)) {
    say(`note: ${new URL(address).host} is this machine only: a phone or another computer cannot open it. Set the service's FRONTEND_URL (and API_URL) to an address they reach.`);
  } else if (redirectHost !== undefined && LOCAL_HOSTS.test(redirectHost)) {
    say(`note: the browser is sent back to ${redirectHost}: sign in on this machine, or give --redirect-host this device's address on the network.`);
  }
}

function readOptions(args: string[]) {
  try {
    return parseArgs({
      args,
      options: {
        api: { type: 'string' },
        'client-id': { type: 'string' },
        transport: { type: 'string' },
        state: { type: 'string' },
        scope: { type: 'string' },
        'redirect-port': { type: 'string' },
        'redirect-host': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/\.$/, ''));
  }
}

function checkedUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.origin;
  } catch {
    // said below
  }
  throw new UsageError(`--api is the service's http(s) address, e.g. https://voyage.example (got ${JSON.stringify(value)})`);
}

// Exits once done: a token request still retrying an unreachable service would keep Node running.
main(process.argv.slice(2)).then(
  (status) => process.exit(status),
  (error: unknown) => {
    if (error instanceof UsageError) {
      say(`${error.message}. See: voyage-connect-device --help`);
      process.exit(2);
    }
    say(error instanceof VoyageError ? `${stripVTControlCharacters(error.message)}: ${error.hint}` : (error as Error).message);
    process.exit(1);
  },
);
