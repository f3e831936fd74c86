/**
 * Fixtures bench/websocket.ts puts into a running service before a measured run: clients (one
 * made by the CLI, the rest cloned from it in SQL), client_credentials tokens, and stored
 * notification backlogs inserted in bulk.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { withDatabase } from './fixtures.js';
import type { RunningService } from './harness.js';
import { benchNotification } from './ws-common.js';

export interface Client {
  client_id: string;
  client_secret: string;
}

/** A client_credentials access token (`scope` omitted: the service's default, notification:subscribe). */
export async function clientToken(base: string, client: Client, scope?: string): Promise<string> {
  const response = await fetch(`${base}/public/api/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, ...(scope ? { scope } : {}) }),
  });
  const body = (await response.json()) as { access_token?: string; error?: string };
  if (!body.access_token) throw new Error(`token for ${client.client_id}: ${response.status} ${body.error}`);
  return body.access_token;
}

/** A subscriber client (client_credentials, default scope) registered with the admin CLI. */
export const createSubscriber = (service: RunningService): Promise<Client> =>
  service.cli('client:create', '--name', `bench-subscriber-${randomUUID()}`, '--grant', 'client_credentials');

export const createPublisher = (service: RunningService): Promise<Client> =>
  service.cli('client:create', '--name', `bench-publisher-${randomUUID()}`, '--grant', 'client_credentials', '--scope', 'notification:publish');

/**
 * `count` more clients with the template's settings and secret, copied row by row in SQL: the CLI
 * takes about a second per client, too slow for a thousand. Every column but id and name is
 * copied, whatever the table holds.
 */
export async function cloneClients(service: RunningService, template: Client, count: number): Promise<Client[]> {
  const ids = Array.from({ length: count }, () => randomBytes(16).toString('base64url'));
  await withDatabase(service, async (db) => {
    const { rows } = await db.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = 'clients' AND column_name NOT IN ('id', 'name')`,
    );
    const columns = rows.map((row) => `"${row.column_name}"`);
    await db.query(
      `INSERT INTO clients (id, name, ${columns.join(', ')})
       SELECT copy.id, 'bench-clone-' || copy.id, ${columns.map((column) => `clients.${column}`).join(', ')}
       FROM clients, unnest($2::text[]) AS copy(id) WHERE clients.id = $1`,
      [template.client_id, ids],
    );
  });
  return ids.map((client_id) => ({ client_id, client_secret: template.client_secret }));
}

/** Tokens for many clients, a few requests at a time. */
export async function clientTokens(base: string, clients: Client[], parallel = 16): Promise<string[]> {
  const tokens: string[] = new Array(clients.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < clients.length) {
        const index = next++;
        tokens[index] = await clientToken(base, clients[index]);
      }
    }),
  );
  return tokens;
}

/**
 * Stores `count` notifications for `recipient` as if published while it was offline (no NOTIFY:
 * nobody listens). Payloads are what the publish route stores (the notification's fields, in their documented order);
 * `origin` carries the index ("replay-<i>") so the receiver can check order and completeness.
 * A VACUUM ANALYZE afterwards, so autovacuum does not start on the fresh rows during the replay.
 */
export async function insertBacklog(service: RunningService, recipient: string, count: number): Promise<void> {
  const stamp = new Date().toISOString();
  await withDatabase(service, async (db) => {
    for (let start = 0; start < count; start += 5000) {
      const ids: string[] = [];
      const payloads: string[] = [];
      for (let index = start; index < Math.min(count, start + 5000); index++) {
        const correlationId = randomUUID();
        ids.push(correlationId);
        payloads.push(JSON.stringify(benchNotification(correlationId, `replay-${index}`, stamp)));
      }
      // One statement per chunk; rows get their seq in array order.
      await db.query(
        `INSERT INTO notifications (recipient, correlation_id, status, payload, expires_at)
         SELECT $1, item.correlation_id, 'New', item.payload, now() + interval '7 days'
         FROM unnest($2::uuid[], $3::text[]) WITH ORDINALITY AS item(correlation_id, payload, position) ORDER BY item.position`,
        [recipient, ids, payloads],
      );
    }
    await db.query('VACUUM ANALYZE notifications');
  });
}
