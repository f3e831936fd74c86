import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { clientToken, PUBLISH_SCOPE, type PublishBody, pushedMessage } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { closeStreamClients, eventually, openV2, publishTo, subscriberClient, type V2Client, WS_PATH } from '../../factories/stream-clients.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// Protocol v2 (subprotocol voyage.v2) with real `ws` clients: the envelope, acks, resuming from the
// client's own position, resets, and the token replaced in band.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


const correlationIds = (client: V2Client) => client.notifications().map((message) => message.data!.correlationId);

afterEach(() => closeStreamClients());

describe('protocol v2', () => {
  let app: TestApp;
  let publisher: string;
  let client: TestClient;
  let token: string;

  beforeAll(async () => {
    app = await startTestApp({});
    publisher = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
  });
  afterAll(() => app?.close());

  async function freshSubscriber() {
    client = await subscriberClient(app);
    token = await clientToken(app, client);
  }

  it('is negotiated by subprotocol: each notification is {type, seq, epoch, data} with the notification’s fields, oldest first', async () => {
    await freshSubscriber();
    const bodies = [await publishTo(app, publisher, client.id), await publishTo(app, publisher, client.id)];
    const stream = await openV2(app.baseUrl, token);
    expect(stream.ws.protocol).toBe('voyage.v2');
    await eventually(() => stream.notifications().length === 2, 5_000, 'the replay');
    const [first, second] = stream.notifications();
    expect(Object.keys(first)).toEqual(['type', 'seq', 'epoch', 'data']);
    expect(first.data).toEqual(pushedMessage(bodies[0]));
    expect(second.data).toEqual(pushedMessage(bodies[1]));
    expect(second.seq).toBeGreaterThan(first.seq!);
    expect(first.epoch).toMatch(/^[0-9a-f]{32}$/);
    expect(second.epoch).toBe(first.epoch);
    // Live, after the replay.
    const live = await publishTo(app, publisher, client.id);
    await eventually(() => stream.notifications().length === 3, 5_000, 'the live notification');
    expect(stream.notifications()[2].data).toEqual(pushedMessage(live));
  });

  it('sends again what was not acknowledged, and nothing an ack (of that seq or a later one) confirmed', async () => {
    await freshSubscriber();
    const bodies = [await publishTo(app, publisher, client.id), await publishTo(app, publisher, client.id), await publishTo(app, publisher, client.id)];
    const first = await openV2(app.baseUrl, token);
    await eventually(() => first.notifications().length === 3, 5_000, 'the replay');
    // Confirming the second confirms the first too.
    first.ack(first.notifications()[1].seq!);
    await sleep(400); // the cursor is saved every 250 ms
    first.ws.close();
    await first.closed;
    const second = await openV2(app.baseUrl, token);
    await eventually(() => second.notifications().length === 1, 5_000, 'the unacknowledged one');
    await sleep(300);
    expect(correlationIds(second)).toEqual([bodies[2].correlationId]);
  });

  it('never lets an ack confirm what the connection was not sent: an ack of a later seq moves nothing', async () => {
    await freshSubscriber();
    const body = await publishTo(app, publisher, client.id);
    const first = await openV2(app.baseUrl, token);
    await eventually(() => first.notifications().length === 1, 5_000, 'the notification');
    const seq = first.notifications()[0].seq!;
    for (const forged of [seq + 1, seq + 1_000_000, Number.MAX_SAFE_INTEGER]) first.ack(forged);
    await sleep(400);
    first.ws.close();
    await first.closed;
    const second = await openV2(app.baseUrl, token);
    await eventually(() => second.notifications().length === 1, 5_000, 'the notification again');
    expect(correlationIds(second)).toEqual([body.correlationId]);
  });

  it('resumes after the client’s own position (?after=SEQ), which confirms everything up to it for every connection', async () => {
    await freshSubscriber();
    const bodies = [await publishTo(app, publisher, client.id), await publishTo(app, publisher, client.id), await publishTo(app, publisher, client.id)];
    const first = await openV2(app.baseUrl, token);
    await eventually(() => first.notifications().length === 3, 5_000, 'the replay');
    const [, second] = first.notifications();
    first.ws.close();
    await first.closed;
    const resumed = await openV2(app.baseUrl, token, { after: second.seq, epoch: second.epoch });
    await eventually(() => resumed.notifications().length === 1, 5_000, 'what follows the position');
    expect(resumed.messages.map((message) => message.type)).toEqual(['notification']);
    expect(correlationIds(resumed)).toEqual([bodies[2].correlationId]);
    await sleep(400);
    resumed.ws.close();
    await resumed.closed;
    // A connection without a position starts where the resume confirmed.
    const plain = await openV2(app.baseUrl, token);
    await eventually(() => plain.notifications().length === 1, 5_000, 'the unconfirmed third');
    expect(correlationIds(plain)).toEqual([bodies[2].correlationId]);
  });

  it('says reset: epoch first when the position is from another database: another epoch, or a seq this one never had', async () => {
    await freshSubscriber();
    const body = await publishTo(app, publisher, client.id);
    const probe = await openV2(app.baseUrl, token);
    await eventually(() => probe.notifications().length === 1, 5_000, 'the notification');
    const { seq, epoch } = probe.notifications()[0];
    probe.close();
    for (const position of [{ after: seq, epoch: 'a'.repeat(32) }, { after: seq! + 1_000_000, epoch }]) {
      const stream = await openV2(app.baseUrl, token, position);
      await eventually(() => stream.messages.length === 2, 5_000, 'the reset and what remains');
      expect(stream.messages[0]).toEqual({ type: 'reset', reason: 'epoch' });
      // What remains is what the service holds for the client beyond its own cursor.
      expect(stream.messages[1].data).toEqual(pushedMessage(body));
      stream.close();
    }
    // The right epoch and a seq of this database: no reset.
    const fine = await openV2(app.baseUrl, token, { after: seq, epoch });
    await sleep(500);
    expect(fine.messages).toEqual([]);
  });

  it('refuses the upgrade with 400 for a position it never sends, and closes with 1002 on a message that is not protocol v2', async () => {
    await freshSubscriber();
    for (const after of ['-1', '1.5', 'abc', '9'.repeat(30)]) {
      await expect(openV2(app.baseUrl, token, { after })).rejects.toMatchObject({ status: 400 });
    }
    await expect(openV2(app.baseUrl, token, { epoch: 'no spaces' })).rejects.toMatchObject({ status: 400 });
    for (const message of ['not json', '[1]', '{"type":"ack"}', '{"type":"ack","seq":-3}', '{"type":"token","access_token":5}']) {
      const stream = await openV2(app.baseUrl, token);
      stream.ws.send(message);
      expect((await stream.closed).code).toBe(1002);
    }
    // Types it does not know are ignored, so later versions may add some.
    const stream = await openV2(app.baseUrl, token);
    stream.ws.send('{"type":"hello"}');
    await sleep(300);
    expect(stream.closeInfo).toBeUndefined();
  });

  it('leaves the original stream as it was: without the subprotocol, raw notifications and a delivery ping', async () => {
    await freshSubscriber();
    const body = await publishTo(app, publisher, client.id);
    const ws = new WebSocket(`${app.baseUrl.replace(/^http/, 'ws')}${WS_PATH}?after=0&epoch=x`, { headers: { Authorization: `Bearer ${token}` } });
    const received: unknown[] = [];
    const pings: string[] = [];
    ws.on('message', (data) => received.push(JSON.parse(data.toString())));
    ws.on('ping', (data) => pings.push(data.toString()));
    await new Promise((resolve) => ws.once('open', resolve));
    expect(ws.protocol).toBe('');
    await eventually(() => received.length === 1 && pings.length === 1, 5_000, 'the notification and its ping');
    expect(received).toEqual([pushedMessage(body)]);
    expect(pings[0]).toMatch(/^[1-9][0-9]*$/);
    ws.terminate();
  });
});

describe('protocol v2: resets after retention', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ NOTIFICATION_RETENTION: '2', HOUSEKEEPING_INTERVAL: '1' });
  });
  afterAll(() => app?.close());

  it('says reset: retention first when something the client missed expired, before what remains', async () => {
    const client = await subscriberClient(app);
    const token = await clientToken(app, client);
    const publisher = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
    const stream = await openV2(app.baseUrl, token);
    const first = await publishTo(app, publisher, client.id);
    await eventually(() => stream.notifications().length === 1, 5_000, 'the first');
    const position = stream.notifications()[0];
    stream.close();
    // Away longer than the retention: the next one expires unseen (and is purged).
    await publishTo(app, publisher, client.id);
    await sleep(3_500);
    const [{ count }] = await query<{ count: number }>(app.databaseUrl, 'SELECT count(*)::int AS count FROM notifications WHERE recipient = $1', [client.id]);
    expect(count).toBe(0);
    const kept = await publishTo(app, publisher, client.id);
    const resumed = await openV2(app.baseUrl, token, { after: position.seq, epoch: position.epoch });
    await eventually(() => resumed.messages.length === 2, 5_000, 'the reset and what remains');
    expect(resumed.messages[0]).toEqual({ type: 'reset', reason: 'retention' });
    expect(resumed.messages[1].data).toEqual(pushedMessage(kept));
    expect(first.correlationId).not.toBe(kept.correlationId);
  });

  it('says nothing when what expired was already read', async () => {
    const client = await subscriberClient(app);
    const token = await clientToken(app, client);
    const publisher = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
    const stream = await openV2(app.baseUrl, token);
    await publishTo(app, publisher, client.id);
    await eventually(() => stream.notifications().length === 1, 5_000, 'the notification');
    const position = stream.notifications()[0];
    stream.close();
    await sleep(3_500);
    const resumed = await openV2(app.baseUrl, token, { after: position.seq, epoch: position.epoch });
    await sleep(500);
    expect(resumed.messages).toEqual([]);
  });
});

describe('protocol v2: the token replaced in band', () => {
  let app: TestApp;
  // Short-lived tokens, so five lifetimes pass in under a minute; the notice comes at half of one.
  const TTL_S = 10;

  beforeAll(async () => {
    app = await startTestApp({ CLIENT_TOKEN_TTL: String(TTL_S) });
  });
  afterAll(() => app?.close());

  it(`lives through 5 token lifetimes (${TTL_S} s tokens) replacing its token on "expiring", never closed with 4003, while a v1 stream is`, async () => {
    const client = await subscriberClient(app);
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    const v2 = await openV2(app.baseUrl, await clientToken(app, client));
    const replaced: number[] = [];
    v2.ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { type: string; in: number };
      if (message.type !== 'expiring') return;
      expect(message.in).toBeLessThanOrEqual(TTL_S);
      void clientToken(app, client).then((fresh) => {
        v2.replaceToken(fresh);
        replaced.push(Date.now());
      });
    });
    const v1 = new WebSocket(`${app.baseUrl.replace(/^http/, 'ws')}${WS_PATH}`, { headers: { Authorization: `Bearer ${await clientToken(app, client)}` } });
    const v1Closed = new Promise<number>((resolve) => v1.once('close', (code) => resolve(code)));
    const started = Date.now();
    const bodies: PublishBody[] = [];
    while (Date.now() - started < 5 * TTL_S * 1000) {
      await sleep(4_000);
      // A fresh publisher token each time: it lives TTL_S too.
      bodies.push(await publishTo(app, await clientToken(app, publisher, PUBLISH_SCOPE), client.id));
    }
    expect(await v1Closed).toBe(4003);
    expect(v2.closeInfo).toBeUndefined();
    expect(replaced.length).toBeGreaterThanOrEqual(5);
    await eventually(() => v2.notifications().length === bodies.length, 5_000, 'every notification');
    expect(correlationIds(v2)).toEqual(bodies.map((body) => body.correlationId));
  }, 150_000);

  it('closes with 4003 on a replacement that is not valid for the stream: another client’s, or a forged one', async () => {
    const client = await subscriberClient(app);
    const other = await subscriberClient(app);
    for (const replacement of [await clientToken(app, other), 'e30.e30.AAAA']) {
      const stream = await openV2(app.baseUrl, await clientToken(app, client));
      stream.replaceToken(replacement);
      expect((await stream.closed).code).toBe(4003);
    }
  });
});
