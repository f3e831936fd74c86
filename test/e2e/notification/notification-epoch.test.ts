import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../../src/clients/client-secret.js';
import { ensureDatabase, startEmbeddedPostgres } from '../../../src/database/embedded-postgres.js';
import { clientToken, PUBLISH_SCOPE, type PublishBody, publish, pushedMessage, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { closeStreamClients, eventually, openSse, openV2 } from '../../factories/stream-clients.js';
import { query } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// A database replaced under the service: the test's own PostgreSQL cluster is destroyed and made
// again empty (a new initdb, same folder and port), and the service starts on it (its migrations
// make a new epoch). A device that resumes from a position in the old database is told
// reset: epoch first, by protocol v2 and by server-sent events: when its epoch is not the
// service's, and when its position is beyond anything the new database has (an SSE client that
// only has its Last-Event-ID).

const DATABASE = 'voyage';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A PostgreSQL cluster of this test's own (initdb into `dataDir`, on `port`), to be destroyed and made again. */
async function throwawayCluster(dataDir: string, port: number): Promise<{ databaseUrl: string; destroy(): Promise<void> }> {
  const server = await startEmbeddedPostgres({ dataDir, port });
  await ensureDatabase(server.url(), DATABASE);
  return {
    databaseUrl: server.url(DATABASE),
    async destroy() {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The client registered again in a new database, as an operator restoring its registrations would: same id, same secret. */
async function registerAgain(databaseUrl: string, client: TestClient): Promise<void> {
  await query(databaseUrl, `INSERT INTO clients (id, name, grants, scopes, secret_hash) VALUES ($1, 'ship', '{client_credentials}', $2, $3)`, [
    client.id,
    [SUBSCRIBE_SCOPE],
    hashClientSecret(client.secret),
  ]);
}

async function publishTo(app: TestApp, publisher: string, recipient: string): Promise<PublishBody> {
  const body = validNotification(recipient);
  const response = await publish(app, publisher, body);
  expect(response.status).toBe(202);
  return body;
}

const publisherToken = async (app: TestApp) => clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);

afterEach(() => closeStreamClients());

describe('a database replaced under the service', () => {
  let dataDir: string | undefined;
  let cluster: { databaseUrl: string; destroy(): Promise<void> } | undefined;
  let app: TestApp | undefined;

  afterAll(async () => {
    await app?.close();
    await cluster?.destroy();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('gives reset: epoch to a client resuming from the old one: protocol v2 with ?after=SEQ&epoch=E, SSE with ?epoch=E or a Last-Event-ID beyond the new database', { timeout: 180_000 }, async () => {
    // The folder itself (mkdtemp's 0700 would keep the postgres account out of a folder inside it).
    dataDir = await mkdtemp(join(tmpdir(), 'voyage-connect-epoch-'));
    const [databasePort, servicePort] = [await freePort(), String(await freePort())];

    // The old database: the ship reads two notifications and keeps its position.
    cluster = await throwawayCluster(dataDir, databasePort);
    app = await startTestApp({ PORT: servicePort }, cluster.databaseUrl);
    const ship = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    const oldPublisher = await publisherToken(app);
    for (let index = 0; index < 2; index++) await publishTo(app, oldPublisher, ship.id);
    const reader = await openV2(app.baseUrl, await clientToken(app, ship));
    await eventually(() => reader.notifications().length === 2, 5_000, 'the old database’s notifications');
    const { seq: oldSeq, epoch: oldEpoch } = reader.notifications()[1];
    reader.close();

    // Replaced: the service stops, the cluster is destroyed and made again empty, the service starts on it.
    await app.close();
    app = undefined;
    await cluster.destroy();
    cluster = await throwawayCluster(dataDir, databasePort);
    app = await startTestApp({ PORT: servicePort }, cluster.databaseUrl);
    await registerAgain(cluster.databaseUrl, ship);
    const token = await clientToken(app, ship);

    // Server-sent events with only a Last-Event-ID: a seq this database never had for the ship.
    const beyond = await openSse(app.baseUrl, token, { lastEventId: String(oldSeq) });
    await eventually(() => beyond.events.length === 1, 5_000, 'the reset of the SSE stream with a Last-Event-ID beyond');
    expect(beyond.events[0]).toMatchObject({ type: 'reset' });
    expect(JSON.parse(beyond.events[0].data)).toEqual({ reason: 'epoch' });
    beyond.close();

    // The new database gets further than the old position, so only the epoch tells them apart.
    const newPublisher = await publisherToken(app);
    const fresh: PublishBody[] = [];
    for (let index = 0; index < 3; index++) fresh.push(await publishTo(app, newPublisher, ship.id));

    // Protocol v2 resuming from the old position: the reset, then everything the new database holds for it.
    const resumed = await openV2(app.baseUrl, token, { after: oldSeq, epoch: oldEpoch });
    await eventually(() => resumed.messages.length === 1 + fresh.length, 5_000, 'the reset of the v2 stream and the new notifications');
    await sleep(300);
    expect(resumed.messages[0]).toEqual({ type: 'reset', reason: 'epoch' });
    expect(resumed.notifications().map((message) => message.data)).toEqual(fresh.map(pushedMessage));
    const newEpoch = resumed.notifications()[0].epoch;
    expect(newEpoch).not.toBe(oldEpoch);
    expect(resumed.notifications().at(-1)!.seq).toBeGreaterThanOrEqual(oldSeq!);
    resumed.close();

    // Server-sent events with the old epoch and a Last-Event-ID the new database also has.
    const withEpoch = await openSse(app.baseUrl, token, { lastEventId: String(oldSeq), epoch: oldEpoch });
    await eventually(() => withEpoch.events.length === 1 + fresh.length, 5_000, 'the reset of the SSE stream with ?epoch= and the new notifications');
    expect(withEpoch.events[0]).toMatchObject({ type: 'reset' });
    expect(JSON.parse(withEpoch.events[0].data)).toEqual({ reason: 'epoch' });
    expect(withEpoch.notifications()).toEqual(fresh.map(pushedMessage));
  });
});
