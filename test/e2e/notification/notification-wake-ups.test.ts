import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PREVIOUS_RELEASE_LISTENER } from '../../../src/database/pg-listener.service.js';
import { PreviousReleaseListenersService } from '../../../src/notification/publish/previous-release-listeners.service.js';
import { PREVIOUS_RELEASE_CHANNEL, WAKE_CHANNEL, wakeKey, wakeKeysIn } from '../../../src/notification/publish/wake-ups.js';
import { clientToken, PUBLISH_SCOPE, publish, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * How a publish wakes the instances, watched by a LISTENing connection of the test's own: once
 * per transaction with its recipients' keys; recipient by recipient too while an instance of the
 * previous release listens; and what that release sends is still read.
 */

const BATCH_RECIPIENTS = 40;

/** A connection that LISTENs on both channels and keeps what arrives, as `applicationName`. */
async function watch(databaseUrl: string, applicationName = 'wake-up-watcher') {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: applicationName });
  await client.connect();
  const heard: { channel: string; payload: string }[] = [];
  client.on('notification', ({ channel, payload }) => heard.push({ channel, payload: payload ?? '' }));
  await client.query(`LISTEN ${WAKE_CHANNEL}`);
  await client.query(`LISTEN ${PREVIOUS_RELEASE_CHANNEL}`);
  return { heard, on: (channel: string) => heard.filter((notification) => notification.channel === channel), end: () => client.end() };
}

describe('waking the instances after a publish', () => {
  let app: TestApp;
  let publisherToken: string;
  let recipients: TestClient[];
  const ends: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    app = await startTestApp();
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    publisherToken = await clientToken(app, publisher, PUBLISH_SCOPE);
    recipients = [];
    for (let index = 0; index < BATCH_RECIPIENTS; index++) recipients.push(await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] }));
  });
  afterEach(async () => {
    await Promise.all(ends.splice(0).map((end) => end()));
  });
  afterAll(async () => {
    await app?.close();
  });

  const publishBatch = async (to: TestClient[]) => {
    const response = await fetch(`${app.baseUrl}/voyage/notification/v1/notifications/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${publisherToken}` },
      body: JSON.stringify(to.map((recipient) => validNotification(recipient.id))),
    });
    expect(response.status).toBe(202);
  };
  const previousReleaseSeen = () => app.get(PreviousReleaseListenersService).present;

  it('sends one wake-up for a batch’s transaction, naming each recipient by its key, and none recipient by recipient', async () => {
    const watcher = await watch(app.databaseUrl);
    ends.push(watcher.end);
    await expect.poll(previousReleaseSeen, { timeout: 5000 }).toBe(false);
    await publishBatch(recipients);
    await expect.poll(() => watcher.on(WAKE_CHANNEL).length, { timeout: 5000 }).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const wakeUps = watcher.on(WAKE_CHANNEL);
    expect(wakeUps).toHaveLength(1);
    expect(new Set(wakeKeysIn(wakeUps[0].payload))).toEqual(new Set(recipients.map((recipient) => wakeKey(recipient.id))));
    expect(watcher.on(PREVIOUS_RELEASE_CHANNEL)).toEqual([]);
  });

  it('also wakes recipient by recipient while an instance of the previous release listens, and stops once it is gone', async () => {
    const previous = await watch(app.databaseUrl, PREVIOUS_RELEASE_LISTENER);
    await expect.poll(previousReleaseSeen, { timeout: 5000 }).toBe(true);
    await publishBatch(recipients.slice(0, 3));
    // (Recipients of a publish shortly before it was seen may be woken again too: see the next test.)
    await expect.poll(() => previous.on(PREVIOUS_RELEASE_CHANNEL).map(({ payload }) => payload), { timeout: 5000 }).toEqual(
      expect.arrayContaining(recipients.slice(0, 3).map((recipient) => recipient.id)),
    );
    // The recipients above may have come from that wake-up again, sent before the publish: its own
    // NOTIFY can arrive after the 202.
    await expect.poll(() => previous.on(WAKE_CHANNEL).length, { timeout: 5000 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(previous.on(WAKE_CHANNEL)).toHaveLength(1);

    await previous.end();
    await expect.poll(previousReleaseSeen, { timeout: 5000 }).toBe(false);
    const watcher = await watch(app.databaseUrl);
    ends.push(watcher.end);
    await publishBatch(recipients.slice(3, 6));
    await expect.poll(() => watcher.on(WAKE_CHANNEL).length, { timeout: 5000 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(watcher.on(PREVIOUS_RELEASE_CHANNEL)).toEqual([]);
  });

  it('wakes recipient by recipient an instance of the previous release that starts listening, for what was published before this instance saw it', async () => {
    await expect.poll(previousReleaseSeen, { timeout: 5000 }).toBe(false);
    // It starts, and a publish commits before this instance's next look at PostgreSQL (once a second).
    const previous = await watch(app.databaseUrl, PREVIOUS_RELEASE_LISTENER);
    ends.push(previous.end);
    await publishBatch(recipients.slice(6, 9));
    // (Recipients of a publish shortly before it may be woken again too: a wake-up that finds nothing new costs one read.)
    await expect.poll(() => previous.on(PREVIOUS_RELEASE_CHANNEL).map(({ payload }) => payload), { timeout: 5000 }).toEqual(
      expect.arrayContaining(recipients.slice(6, 9).map((recipient) => recipient.id)),
    );
  });

  describe('a subscriber on this instance', () => {
    const streams: Stream[] = [];
    afterEach(async () => {
      await Promise.all(streams.splice(0).map((stream) => stream.close()));
    });
    const subscribe = async (recipient: TestClient) => {
      const stream = await openStream(app.baseUrl, await clientToken(app, recipient));
      streams.push(stream);
      return stream;
    };

    it('receives what an instance of the previous release stores and wakes recipient by recipient', async () => {
      const recipient = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
      const stream = await subscribe(recipient);
      const body = validNotification(recipient.id);
      // As that release publishes: the row, then one NOTIFY with the recipient, in its transaction.
      await query(
        app.databaseUrl,
        `WITH stored AS (
           INSERT INTO notifications (recipient, correlation_id, status, payload, expires_at)
           VALUES ($1, $2, $3, $4, now() + interval '1 hour') RETURNING recipient)
         SELECT pg_notify('${PREVIOUS_RELEASE_CHANNEL}', recipient) FROM stored`,
        [recipient.id, body.correlationId, body.status, JSON.stringify({ correlationId: body.correlationId, status: body.status })],
      );
      const [message] = await stream.received(1);
      expect(message).toMatchObject({ correlationId: body.correlationId });
    });

    it('keeps delivering after wake-ups that name nobody or are not of the format', async () => {
      const recipient = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
      const stream = await subscribe(recipient);
      for (const payload of ['', 'x', 'not-a-key-list!', 'AAAAAA'.repeat(1000)]) await query(app.databaseUrl, 'SELECT pg_notify($1, $2)', [WAKE_CHANNEL, payload]);
      const body = validNotification(recipient.id);
      expect((await publish(app, publisherToken, body)).status).toBe(202);
      const [message] = await stream.received(1);
      expect(message).toMatchObject({ correlationId: body.correlationId });
    });
  });
});
