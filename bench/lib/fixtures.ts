/**
 * Grants in bulk for the token benchmarks. A code normally comes from a person signing in on the
 * login page (an argon2 check each), far too slow to make tens of thousands; so the sign-ins are
 * written straight into the service's database, exactly as the login page records them, and
 * everything measured afterwards goes through the real HTTP routes.
 */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import type { RunningService } from './harness.js';

export interface BenchClient {
  client_id: string;
  client_secret: string;
}

const BATCH = 5_000;

/** `count` unused authorization codes of `client`, each from its own completed sign-in. */
export function mintCodes(service: RunningService, client: BenchClient, count: number): Promise<string[]> {
  return withDatabase(service, async (db) => {
    const user = await benchUser(db);
    const codes: string[] = [];
    for (let start = 0; start < count; start += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, count - start) }, () => ({ code: randomBytes(32).toString('base64url'), state: randomBytes(16).toString('base64url') }));
      await db.query(
        `WITH approved AS (
           INSERT INTO authorizations (state_id, client_id, user_id, expires_at, picked_up_at)
           SELECT state, $1, $2, now() + interval '1 hour', now() FROM unnest($3::text[]) AS state RETURNING state_id)
         INSERT INTO authorization_codes (code_hash, state_id, client_id, user_id, expires_at)
         SELECT hash, state, $1, $2, now() + interval '1 hour' FROM unnest($4::bytea[], $3::text[]) AS fixture (hash, state)`,
        [client.client_id, user.id, batch.map((item) => item.state), batch.map((item) => createHash('sha256').update(item.code).digest())],
      );
      codes.push(...batch.map((item) => item.code));
    }
    return codes;
  });
}

/** `count` live refresh tokens of `client`, each the start of its own grant, from real code exchanges. */
export async function refreshTokens(service: RunningService, client: BenchClient, count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (const code of await mintCodes(service, client, count)) {
    const response = await fetch(`${service.base}/sso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: client.client_id, client_secret: client.client_secret }),
    });
    const body = (await response.json()) as { refresh_token?: string };
    if (!body.refresh_token) throw new Error(`code exchange answered ${response.status} ${JSON.stringify(body)}`);
    tokens.push(body.refresh_token);
  }
  return tokens;
}

/** Fills `authorizations` with `count` collected sign-ins: the table a code poll would otherwise search. */
export function fillAuthorizations(service: RunningService, client: BenchClient, count: number): Promise<void> {
  return withDatabase(service, async (db) => {
    const user = await benchUser(db);
    await db.query(
      `INSERT INTO authorizations (state_id, client_id, user_id, expires_at, picked_up_at)
       SELECT 'fill-' || i, $1, $2, now() + interval '1 hour', now() FROM generate_series(1, $3::int) AS i
       ON CONFLICT DO NOTHING`,
      [client.client_id, user.id, count],
    );
    await db.query('VACUUM ANALYZE authorizations');
  });
}

/** The portal user every fixture sign-in belongs to; its password hash matches no password. */
async function benchUser(db: pg.Client): Promise<{ id: string }> {
  const { rows } = await db.query(
    `INSERT INTO portal_users (username, password_hash) VALUES ('bench-user', '!fixture')
     ON CONFLICT ((lower(username))) DO UPDATE SET username = EXCLUDED.username RETURNING id`,
  );
  return rows[0];
}

/** A connection to the service's own database for the length of `work`. */
export async function withDatabase<T>(service: RunningService, work: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: service.databaseUrl });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}
