import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { generateKeyPair, SignJWT } from 'jose';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { KeysService } from '../../../src/keys/keys.service.js';
import { ConnectionRegistryService } from '../../../src/notification/streams/connection-registry.service.js';
import { NotificationGateway } from '../../../src/notification/streams/notification.gateway.js';
import { clientToken, PUBLISH_SCOPE, type PublishBody, publish, pushedMessage, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { flipSignatureByte, hmacState, issueState, servicePublicKey, unsignedState } from '../../factories/state.factory.js';
import { createTestDatabase } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { runCli, type ServiceProcess, spawnService, waitForStatus } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * The notification stream (the notification service) with real `ws` clients:
 * what is refused before the upgrade, and every way an open connection ends.
 */

const STREAM_PATH = '/voyage/notification/v1/ws/products';
const REALM = 'Bearer realm="voyage-connect"';
const INVALID_TOKEN = /^Bearer realm="voyage-connect", error="invalid_token"/;
const ALLOWED_ORIGIN = 'https://portal.example.test';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function waitUntil(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

// ---------------------------------------------------------------------------------------------
// WebSocket clients
// ---------------------------------------------------------------------------------------------

interface CloseInfo {
  code: number;
  reason: string;
  at: number;
}

/** An open stream as a client sees it: what it received, how often it was pinged, how it ended. */
interface Stream {
  ws: WebSocket;
  openedAt: number;
  messages: Record<string, unknown>[];
  pings: number;
  closeInfo?: CloseInfo;
  closed: Promise<CloseInfo>;
}

/** The outcome of an upgrade request: 101 with a stream, or the HTTP refusal. */
interface Upgrade {
  status: number;
  headers: IncomingHttpHeaders;
  stream?: Stream;
}

interface UpgradeOptions {
  /** The whole Authorization header (absent when undefined). */
  authorization?: string;
  origin?: string;
  autoPong?: boolean;
}

/** Every socket a test opened; each is terminated after the test. */
const sockets = new Set<WebSocket>();

const streamUrl = (baseUrl: string) => `${baseUrl.replace(/^http/, 'ws')}${STREAM_PATH}`;
const bearer = (token: string) => `Bearer ${token}`;

/** Sends the upgrade request; resolves with 101 and the open stream, or with the HTTP status and headers of the refusal. */
function upgrade(baseUrl: string, options: UpgradeOptions = {}): Promise<Upgrade> {
  const ws = new WebSocket(streamUrl(baseUrl), {
    headers: options.authorization === undefined ? {} : { Authorization: options.authorization },
    ...(options.origin ? { origin: options.origin } : {}),
    autoPong: options.autoPong ?? true,
    perMessageDeflate: false,
  });
  sockets.add(ws);
  let resolveClosed!: (info: CloseInfo) => void;
  const stream: Stream = { ws, openedAt: 0, messages: [], pings: 0, closed: new Promise((resolve) => (resolveClosed = resolve)) };
  ws.on('close', (code, reason) => {
    stream.closeInfo = { code, reason: reason.toString(), at: Date.now() };
    resolveClosed(stream.closeInfo);
  });
  ws.on('message', (data) => stream.messages.push(JSON.parse(data.toString())));
  ws.on('ping', () => stream.pings++);
  ws.on('error', () => {}); // refusals and aborted handshakes surface through the promise below
  let headers: IncomingHttpHeaders = {};
  ws.once('upgrade', (response) => (headers = response.headers));
  const outcome = new Promise<Upgrade>((resolve, reject) => {
    ws.once('unexpected-response', (_request, response) => {
      resolve({ status: response.statusCode!, headers: response.headers });
      ws.terminate();
    });
    ws.once('open', () => {
      stream.openedAt = Date.now();
      resolve({ status: 101, headers, stream });
    });
    ws.once('error', reject);
  });
  return withTimeout(outcome, 5_000, 'the upgrade');
}

/** An upgrade that must succeed. */
async function connect(baseUrl: string, token: string, options: Omit<UpgradeOptions, 'authorization'> = {}): Promise<Stream> {
  const result = await upgrade(baseUrl, { ...options, authorization: bearer(token) });
  if (!result.stream) throw new Error(`the upgrade answered ${result.status} (${result.headers['www-authenticate'] ?? ''})`);
  return result.stream;
}

const waitClose = (stream: Stream, ms: number) => withTimeout(stream.closed, ms, 'the close');

/** Waits until `stream` has `count` messages, or nothing more arrived for `quietMs`, or `ms` passed; returns the correlation ids. */
async function collect(stream: Stream, count: number, ms: number, quietMs = 1_000): Promise<unknown[]> {
  const deadline = Date.now() + ms;
  let seen = stream.messages.length;
  let lastChange = Date.now();
  while (stream.messages.length < count && Date.now() < deadline && Date.now() - lastChange < quietMs) {
    await sleep(20);
    if (stream.messages.length !== seen) [seen, lastChange] = [stream.messages.length, Date.now()];
  }
  return stream.messages.map((message) => message.correlationId);
}

/** The server side of a client's connections on `app` (the gateway's own bookkeeping). */
function serverSockets(app: TestApp, clientId: string): WebSocket[] {
  return app.get(ConnectionRegistryService).ofClient(clientId).map((connection) => (connection.transport as unknown as { socket: WebSocket }).socket);
}

/** ~60 KB of warnings (the body limit is 64 KB): 120 such notifications outrun the kernel's socket buffers. */
const BULKY_WARNINGS = Array.from({ length: 30 }, (_, index) => `${index}`.padEnd(1_990, '.'));
const BULKY_COUNT = 120;

// ---------------------------------------------------------------------------------------------
// Clients, tokens, publishing
// ---------------------------------------------------------------------------------------------

const subscriberClient = (app: TestApp) => createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });

const publisherTokens = new WeakMap<TestApp, { token: Promise<string>; at: number }>();

/** A notification:publish token of a publisher client of `app`, renewed after 30 s (CLIENT_TOKEN_TTL may be 60). */
function publisherToken(app: TestApp): Promise<string> {
  const cached = publisherTokens.get(app);
  if (cached && Date.now() - cached.at < 30_000) return cached.token;
  const token = createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }).then((client) => clientToken(app, client, PUBLISH_SCOPE));
  publisherTokens.set(app, { token, at: Date.now() });
  return token;
}

/** Publishes a valid notification to `recipient` (202 required) and returns its body. */
async function publishTo(app: TestApp, recipient: string, overrides: Partial<PublishBody> = {}): Promise<PublishBody> {
  const body = validNotification(recipient, overrides);
  const response = await publish(app, await publisherToken(app), body);
  if (response.status !== 202) throw new Error(`publish answered ${response.status}: ${response.text}`);
  return body;
}

/** Publishes one notification and waits until `stream` received it: proof the connection is alive and subscribed. */
async function expectLive(app: TestApp, stream: Stream, recipient: string): Promise<void> {
  const body = await publishTo(app, recipient);
  await waitUntil(() => stream.messages.some((message) => message.correlationId === body.correlationId), 5_000, 'the notification');
  expect(stream.messages.find((message) => message.correlationId === body.correlationId)).toEqual(pushedMessage(body));
  expect(stream.closeInfo).toBeUndefined();
}

/** The claims of a subscribe token as the service issues them; `overrides` change or add any of them. */
function accessClaims(app: TestApp, clientId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return { iss: app.env.identityUrl, sub: clientId, aud: app.env.apiUrl, client_id: clientId, scope: SUBSCRIBE_SCOPE, jti: randomUUID(), iat: now, exp: now + 600, ...overrides };
}

/** An access token signed with the service's own key: by default one the stream accepts; `claims` and `header` change it. */
async function forgeAccessToken(app: TestApp, clientId: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const key = await app.get(KeysService).signingKey();
  return new SignJWT(accessClaims(app, clientId, claims)).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header }).sign(key.privateKey);
}

afterEach(() => {
  for (const ws of sockets) ws.terminate();
  sockets.clear();
});

// ---------------------------------------------------------------------------------------------

describe('the notification stream', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ CLIENT_TOKEN_TTL: '60', WS_ALLOWED_ORIGINS: `${ALLOWED_ORIGIN}, https://other.example.test`, WS_MAX_INCOMING_BYTES: '64' });
    client = await subscriberClient(app);
  });
  afterAll(() => app?.close());

  describe('before the upgrade', () => {
    it('accepts a client-credentials token (101) and one forged exactly like it (the control for the forgeries below)', async () => {
      expect((await upgrade(app.baseUrl, { authorization: bearer(await clientToken(app, client)) })).status).toBe(101);
      expect((await upgrade(app.baseUrl, { authorization: bearer(await forgeAccessToken(app, client.id)) })).status).toBe(101);
    });

    it('accepts the scheme in any case and more than one space before the token (RFC 6750 §2.1: "Bearer" 1*SP b64token)', async () => {
      const token = await clientToken(app, client);
      expect((await upgrade(app.baseUrl, { authorization: `bearer ${token}` })).status).toBe(101);
      expect((await upgrade(app.baseUrl, { authorization: `Bearer   ${token}` })).status).toBe(101);
    });

    it('answers 401 with WWW-Authenticate: Bearer realm="voyage-connect" to a request without Authorization', async () => {
      const refused = await upgrade(app.baseUrl);
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe(REALM);
    });

    const invalid: [string, () => Promise<string>][] = [
      ['a Basic Authorization header', async () => `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`],
      ['"Bearer" without a token', async () => 'Bearer'],
      ['a bearer value with a space in it', async () => `Bearer ${await clientToken(app, client)} extra`],
      ['a garbage token', async () => 'Bearer not-a-jwt'],
      ['a token with one flipped signature byte', async () => bearer(flipSignatureByte(await clientToken(app, client)))],
      [
        'an alg "none" token',
        async () => {
          const { kid } = await app.get(KeysService).signingKey();
          return bearer(unsignedState({ kid, typ: 'at+jwt' }, accessClaims(app, client.id)));
        },
      ],
      [
        'an HS256 token keyed with the public key',
        async () => {
          const { kid, pem } = await servicePublicKey(app);
          return bearer(hmacState(pem, { kid, typ: 'at+jwt' }, accessClaims(app, client.id)));
        },
      ],
      ['an expired token', async () => bearer(await forgeAccessToken(app, client.id, { iat: Math.floor(Date.now() / 1000) - 120, exp: Math.floor(Date.now() / 1000) - 60 }))],
      ['a token of typ "JWT"', async () => bearer(await forgeAccessToken(app, client.id, {}, { typ: 'JWT' }))],
      ['a token of another issuer', async () => bearer(await forgeAccessToken(app, client.id, { iss: 'https://elsewhere.example.test' }))],
      [
        'a helper state (typ vc-state+jwt)',
        async () => {
          const helperClient = await createClient(app, { grants: ['authorization_code'] });
          return bearer((await issueState(app, helperClient.id)).state);
        },
      ],
      [
        'a token signed by a foreign key under the service key id',
        async () => {
          const { kid, alg } = await app.get(KeysService).signingKey();
          const foreign = await generateKeyPair(alg);
          return bearer(await new SignJWT(accessClaims(app, client.id)).setProtectedHeader({ alg, kid, typ: 'at+jwt' }).sign(foreign.privateKey));
        },
      ],
      ['a token for an unknown client', async () => bearer(await forgeAccessToken(app, 'no-such-client'))],
    ];

    it.each(invalid)('answers 401 error="invalid_token" to %s', async (_name, authorization) => {
      const refused = await upgrade(app.baseUrl, { authorization: await authorization() });
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toMatch(INVALID_TOKEN);
    });

    it('answers 403 error="insufficient_scope" to a valid token without the subscribe scope', async () => {
      const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE, SUBSCRIBE_SCOPE] });
      const refused = await upgrade(app.baseUrl, { authorization: bearer(await clientToken(app, publisher, PUBLISH_SCOPE)) });
      expect(refused.status).toBe(403);
      expect(refused.headers['www-authenticate']).toBe(`${REALM}, error="insufficient_scope", scope="${SUBSCRIBE_SCOPE}"`);
      // The same client with the scope gets in.
      expect((await upgrade(app.baseUrl, { authorization: bearer(await clientToken(app, publisher, SUBSCRIBE_SCOPE)) })).status).toBe(101);
    });

    it('answers 401 to the token of a client disabled after it was issued', async () => {
      const disabled = await subscriberClient(app);
      const token = await clientToken(app, disabled);
      expect((await upgrade(app.baseUrl, { authorization: bearer(token) })).status).toBe(101);
      await app.get(ClientsService).setEnabled(disabled.id, false);
      const refused = await upgrade(app.baseUrl, { authorization: bearer(token) });
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toMatch(INVALID_TOKEN);
    });

    it('with WS_ALLOWED_ORIGINS, answers 403 to an unlisted Origin and upgrades a listed or absent one', async () => {
      const token = await clientToken(app, client);
      const foreign = await upgrade(app.baseUrl, { authorization: bearer(token), origin: 'https://evil.example.test' });
      expect(foreign.status).toBe(403);
      expect((await upgrade(app.baseUrl, { authorization: bearer(token), origin: 'https://portal.example.test.evil.test' })).status).toBe(403);
      expect((await upgrade(app.baseUrl, { authorization: bearer(token), origin: ALLOWED_ORIGIN })).status).toBe(101);
      expect((await upgrade(app.baseUrl, { authorization: bearer(token), origin: 'https://other.example.test' })).status).toBe(101);
      expect((await upgrade(app.baseUrl, { authorization: bearer(token) })).status).toBe(101);
    });
  });

  describe('an open connection', () => {
    it('receives its notifications as JSON text messages, exactly the notification fields', async () => {
      const stream = await connect(app.baseUrl, await clientToken(app, client));
      await expectLive(app, stream, client.id);
    });

    it('is closed with 4003 when its token expires (CLIENT_TOKEN_TTL=60; a token forged to expire in 2 s)', async () => {
      const issued = await fetch(`${app.baseUrl}/public/api/oauth2/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }),
      });
      expect(((await issued.json()) as { expires_in: number }).expires_in).toBe(60);

      const exp = Math.ceil(Date.now() / 1000) + 2;
      const stream = await connect(app.baseUrl, await forgeAccessToken(app, client.id, { exp }));
      const closed = await waitClose(stream, 6_000);
      expect(closed.code).toBe(4003);
      const elapsed = closed.at - stream.openedAt;
      expect(elapsed).toBeGreaterThanOrEqual(1_000);
      expect(elapsed).toBeLessThan(4_000);
      expect(closed.at).toBeGreaterThanOrEqual(exp * 1000 - 50); // not before the token's exp
    });

    it('ignores messages the client sends, up to WS_MAX_INCOMING_BYTES', async () => {
      const stream = await connect(app.baseUrl, await clientToken(app, client));
      stream.ws.send('hello');
      stream.ws.send(JSON.stringify({ event: 'subscribe', data: { recipient: 'someone-else' } }));
      stream.ws.send(Buffer.from([0, 1, 2, 3]));
      stream.ws.send('x'.repeat(64)); // exactly the limit
      await expectLive(app, stream, client.id);
    });

    it('is closed with 1009 by a frame larger than WS_MAX_INCOMING_BYTES', async () => {
      const stream = await connect(app.baseUrl, await clientToken(app, client));
      stream.ws.send('x'.repeat(65));
      expect((await waitClose(stream, 5_000)).code).toBe(1009);
    });
  });

  describe('disabling a client', () => {
    it('closes every open connection of that client (ClientsService.setEnabled), and only those', async () => {
      const doomed = await subscriberClient(app);
      const first = await connect(app.baseUrl, await clientToken(app, doomed));
      const second = await connect(app.baseUrl, await clientToken(app, doomed));
      const bystander = await connect(app.baseUrl, await clientToken(app, client));

      await app.get(ClientsService).setEnabled(doomed.id, false);
      const [closedFirst, closedSecond] = await Promise.all([waitClose(first, 5_000), waitClose(second, 5_000)]);
      expect(closedFirst.code).toBe(1008);
      expect(closedSecond.code).toBe(1008);
      await expectLive(app, bystander, client.id);
    });

    it('closes a connection opened just before the client is disabled', async () => {
      const doomed = await subscriberClient(app);
      const token = await clientToken(app, doomed);
      const stream = await connect(app.baseUrl, token);
      await app.get(ClientsService).setEnabled(doomed.id, false); // no pause after the 101
      expect((await waitClose(stream, 5_000)).code).toBe(1008);
    });

    it('closes a connection whose delivery has not started yet (its cursor read is still waiting)', async () => {
      const doomed = await subscriberClient(app);
      const token = await clientToken(app, doomed);
      // Holding this lock keeps the new connection's cursor read (DeliveryService.subscribe) waiting.
      const blocker = new pg.Client({ connectionString: app.databaseUrl });
      await blocker.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query('LOCK TABLE delivery_cursors IN ACCESS EXCLUSIVE MODE');
        const stream = await connect(app.baseUrl, token);
        await app.get(ClientsService).setEnabled(doomed.id, false);
        await sleep(300);
        await blocker.query('ROLLBACK');
        expect((await waitClose(stream, 5_000)).code).toBe(1008);
      } finally {
        await blocker.end();
      }
    });

    it('closes its connections when disabled by the CLI (client:disable) against the same database', async () => {
      const doomed = await subscriberClient(app);
      const stream = await connect(app.baseUrl, await clientToken(app, doomed));
      const disabled = await runCli(['client:disable', doomed.id], { env: { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn' } });
      expect(disabled.code, disabled.stderr).toBe(0);
      expect((await waitClose(stream, 5_000)).code).toBe(1008);
    });

    describe('with a second instance on the same database', () => {
      let other: TestApp;

      beforeAll(async () => {
        other = await startTestApp({}, app.databaseUrl);
      });
      afterAll(() => other?.close());

      it('closes a connection on instance B when the client is disabled through instance A', async () => {
        const doomed = await subscriberClient(app);
        const onB = await connect(other.baseUrl, await clientToken(other, doomed));
        await expectLive(app, onB, doomed.id); // published on A, delivered by B
        await app.get(ClientsService).setEnabled(doomed.id, false);
        expect((await waitClose(onB, 5_000)).code).toBe(1008);
      });
    });
  });
});

describe('the stream at WS_MAX_CONNECTIONS=2', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ WS_MAX_CONNECTIONS: '2' });
    client = await subscriberClient(app);
  });
  afterAll(() => app?.close());

  it('opens then closes the third connection with 1008, and accepts a new one once another closed', async () => {
    const gateway = app.get(NotificationGateway);
    const first = await connect(app.baseUrl, await clientToken(app, client));
    const second = await connect(app.baseUrl, await clientToken(app, client));

    const third = await upgrade(app.baseUrl, { authorization: bearer(await clientToken(app, client)) });
    expect(third.status).toBe(101);
    expect((await waitClose(third.stream!, 5_000)).code).toBe(1008);
    expect(first.closeInfo).toBeUndefined();
    expect(second.closeInfo).toBeUndefined();

    first.ws.close(1000);
    await waitClose(first, 5_000);
    await waitUntil(() => gateway.openConnections === 1, 5_000, 'the server to see the close');
    const fourth = await connect(app.baseUrl, await clientToken(app, client));
    await expectLive(app, fourth, client.id);
    await expectLive(app, second, client.id);
  });
});

describe('the stream with WS_HEARTBEAT_INTERVAL=1', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ WS_HEARTBEAT_INTERVAL: '1' });
    client = await subscriberClient(app);
  });
  afterAll(() => app?.close());

  it('keeps a client that answers pings connected over 3 s', async () => {
    const stream = await connect(app.baseUrl, await clientToken(app, client));
    await sleep(3_200);
    expect(stream.pings).toBeGreaterThanOrEqual(2);
    await expectLive(app, stream, client.id);
  });

  it('drops a client that stops answering pings within ~3 s', async () => {
    const stream = await connect(app.baseUrl, await clientToken(app, client), { autoPong: false });
    const closed = await waitClose(stream, 3_500);
    expect(stream.pings).toBeGreaterThanOrEqual(1);
    expect(closed.code).toBe(1006); // terminated: a client that does not answer pings gets no close frame either
  });
});

/** Holds `LOCK TABLE delivery_cursors` from a session of the test's own, as an operator's long transaction would, until `release()`. */
async function lockDeliveryCursors(databaseUrl: string): Promise<{ release: () => Promise<void> }> {
  const session = new pg.Client({ connectionString: databaseUrl });
  await session.connect();
  await session.query('BEGIN');
  await session.query('LOCK TABLE delivery_cursors IN ACCESS EXCLUSIVE MODE');
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      await session.query('ROLLBACK').finally(() => session.end());
    },
  };
}

describe.each([
  ['with the default database timeouts (its lock wait runs out)', {}],
  [
    'with database timeouts longer than the lock (REQUEST_TIMEOUT_MS=1000 runs out first)',
    { REQUEST_TIMEOUT_MS: '1000', DATABASE_LOCK_TIMEOUT_MS: '30000', DATABASE_STATEMENT_TIMEOUT_MS: '30000' },
  ],
])('a stream that opens while delivery_cursors is locked, %s', (_name, vars: Record<string, string>) => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp(vars);
  });
  afterAll(() => app?.close());

  it('is closed with 1013 while the lock is held, never left open and silent, and its reconnect gets what is published next', async () => {
    const client = await subscriberClient(app);
    const token = await clientToken(app, client);
    const first = await connect(app.baseUrl, token);
    await expectLive(app, first, client.id);

    const lock = await lockDeliveryCursors(app.databaseUrl);
    try {
      const second = await connect(app.baseUrl, token); // 101; its cursor read waits on the lock
      const meanwhile = await publishTo(app, client.id);
      await waitUntil(() => first.messages.some((message) => message.correlationId === meanwhile.correlationId), 5_000, 'the first stream to get it');
      // Without a delivery position the stream is told to reconnect, while the lock is still held.
      const closed = await waitClose(second, 4_000);
      expect({ code: closed.code, reason: closed.reason }).toEqual({ code: 1013, reason: 'service unavailable: reconnect later' });
      expect(second.messages).toEqual([]);
    } finally {
      await lock.release();
    }

    const reconnected = await connect(app.baseUrl, token);
    await expectLive(app, reconnected, client.id);
    await expectLive(app, first, client.id);
  });

  it('loses no hold to a start it gave up on: the reconnect gets again what a connection had left unread', async () => {
    const client = await subscriberClient(app);
    const token = await clientToken(app, client);
    const reader = await connect(app.baseUrl, token);
    const unread = await connect(app.baseUrl, token, { autoPong: false });
    const left = await publishTo(app, client.id);
    await waitUntil(() => reader.messages.length === 1 && unread.messages.length === 1, 5_000, 'the message on both');
    await sleep(500); // the reader's confirmation moved the cursor past it
    unread.ws.terminate(); // it leaves a hold before the message
    await waitClose(unread, 2_000);
    await sleep(500); // the hold is saved

    const lock = await lockDeliveryCursors(app.databaseUrl);
    try {
      // Its start takes the hold over, and it is closed before the start completes.
      const abandoned = await connect(app.baseUrl, token);
      expect((await waitClose(abandoned, 4_000)).code).toBe(1013);
    } finally {
      await lock.release();
    }
    await sleep(500); // a start still waiting completes now

    const reconnected = await connect(app.baseUrl, token);
    expect(await collect(reconnected, 1, 5_000)).toEqual([left.correlationId]);
  });
});

describe('a slow consumer (WS_MAX_BUFFERED_BYTES=1024)', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ WS_MAX_BUFFERED_BYTES: '1024' });
  });
  afterAll(() => app?.close());

  it('is closed once its unsent buffer passes the bound, and gets what it missed when it reconnects', async () => {
    const client = await subscriberClient(app);
    const first = await connect(app.baseUrl, await clientToken(app, client));
    (first.ws as unknown as { _socket: Socket })._socket.pause();

    // Bulky notifications, more than the kernel's socket buffers hold (a few MB) plus the bound; the
    // server gives the full buffer 5 s to drain, then closes the connection ...
    const published: string[] = [];
    for (let index = 0; index < 120; index++) published.push((await publishTo(app, client.id, { warnings: BULKY_WARNINGS })).correlationId);
    await expect
      .poll(() => serverSockets(app, client.id).every((socket) => socket.readyState === WebSocket.OPEN), { timeout: 9_000, interval: 100 })
      .toBe(false);
    // ... then a few small ones it can no longer be sent.
    for (let index = 0; index < 20; index++) published.push((await publishTo(app, client.id)).correlationId);

    (first.ws as unknown as { _socket: Socket })._socket.resume();
    const closed = await waitClose(first, 5_000);
    expect([1013, 1006]).toContain(closed.code); // 1013 by design; a socket that just ends is acceptable
    const before = first.messages.map((message) => message.correlationId);
    expect(before.length).toBeGreaterThan(0);
    expect(before.length).toBeLessThan(published.length - 20);
    expect(before).toEqual(published.slice(0, before.length));

    // What it missed comes on the next connection, in publish order (a repeat of what it already had is tolerated).
    const second = await connect(app.baseUrl, await clientToken(app, client));
    const after = await collect(second, published.length - before.length, 8_000);
    expect(after.length).toBeGreaterThanOrEqual(published.length - before.length);
    expect(after).toEqual(published.slice(published.length - after.length));
    expect(second.closeInfo).toBeUndefined();
  });

  // A replay's own burst fills the buffer; the pump waits for it to drain before calling a client slow.
  it('replays a backlog bigger than the bound to a client that reads (it is not a slow consumer)', async () => {
    const client = await subscriberClient(app);
    const published: string[] = [];
    for (let index = 0; index < BULKY_COUNT; index++) published.push((await publishTo(app, client.id, { warnings: BULKY_WARNINGS })).correlationId);
    const stream = await connect(app.baseUrl, await clientToken(app, client));
    expect(await collect(stream, BULKY_COUNT, 8_000)).toEqual(published);
    expect(stream.closeInfo).toBeUndefined();
  });

  // The cursor moves only when a pong proves the client read; TCP buffers of a dead reader are replayed.
  it('gives a client that never read again everything it did not receive when it reconnects', async () => {
    const client = await subscriberClient(app);
    const stuck = await connect(app.baseUrl, await clientToken(app, client));
    (stuck.ws as unknown as { _socket: Socket })._socket.pause();
    const published: string[] = [];
    for (let index = 0; index < BULKY_COUNT; index++) published.push((await publishTo(app, client.id, { warnings: BULKY_WARNINGS })).correlationId);
    await sleep(500);
    // The device dies without having read any of it.
    expect(stuck.messages).toHaveLength(0);
    stuck.ws.terminate();
    await waitClose(stuck, 2_000);

    const fresh = await connect(app.baseUrl, await clientToken(app, client));
    expect(await collect(fresh, BULKY_COUNT, 8_000)).toEqual(published);
  });
});

describe('shutdown', () => {
  it('app.close() closes every open connection with 1001, not 1006', async () => {
    const app = await startTestApp();
    try {
      const one = await subscriberClient(app);
      const two = await subscriberClient(app);
      const streams = [
        await connect(app.baseUrl, await clientToken(app, one)),
        await connect(app.baseUrl, await clientToken(app, one)),
        await connect(app.baseUrl, await clientToken(app, two)),
      ];
      await withTimeout(app.close(), 5_000, 'app.close()');
      for (const stream of streams) expect((await waitClose(stream, 1_000)).code).toBe(1001);
    } finally {
      await app.close().catch(() => {});
    }
  });

  it('refuses, or closes with 1001, a connection that opens while the instance is shutting down', async () => {
    const app = await startTestApp();
    try {
      const device = await subscriberClient(app);
      const token = await clientToken(app, device);
      // A client that does not read (so never answers the close frame) keeps the shutdown waiting up to its 1 s limit.
      const silent = await connect(app.baseUrl, token);
      (silent.ws as unknown as { _socket: Socket })._socket.pause();
      const closing = app.close();
      await sleep(200);
      const late = await upgrade(app.baseUrl, { authorization: bearer(token) }).catch(() => ({ status: 0, stream: undefined }));
      // Accepted before the shutdown began: closed with 1001 like the others. Otherwise refused:
      // 503 from ws, or no answer (0) if the HTTP server were already closed. Never a 101 cut with 1006.
      if (late.stream) expect((await waitClose(late.stream, 3_000)).code).toBe(1001);
      else expect([503, 0]).toContain(late.status);
      await withTimeout(closing, 5_000, 'app.close()');
    } finally {
      await app.close().catch(() => {});
    }
  });

  describe('of the service process (node dist/main.js)', () => {
    let service: ServiceProcess;
    let baseUrl: string;
    let device: { client_id: string; client_secret: string };

    beforeAll(async () => {
      const databaseUrl = await createTestDatabase();
      const port = await freePort();
      baseUrl = `http://127.0.0.1:${port}`;
      service = spawnService({ DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' });
      await waitForStatus(`${baseUrl}/health`, 200, 60_000);
      const created = await runCli(['client:create', '--name', 'sigterm-device', '--grant', 'client_credentials'], { env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' } });
      if (created.code !== 0) throw new Error(`client:create failed: ${created.stderr}`);
      device = JSON.parse(created.stdout);
    });
    afterAll(() => {
      service?.child.kill('SIGKILL');
    });

    it('on SIGTERM closes the connection with 1001 and exits 0', async () => {
      const response = await fetch(`${baseUrl}/public/api/oauth2/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: device.client_id, client_secret: device.client_secret }),
      });
      expect(response.status).toBe(200);
      const { access_token: token } = (await response.json()) as { access_token: string };
      const stream = await connect(baseUrl, token);

      service.child.kill('SIGTERM');
      expect((await waitClose(stream, 5_000)).code).toBe(1001);
      expect(await withTimeout(service.exited, 10_000, 'the process to exit'), service.output()).toBe(0);
    });
  });
});
