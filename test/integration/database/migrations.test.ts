import { DataSource } from 'typeorm';
import { afterEach, describe, expect, it } from 'vitest';
import { dataSourceOptions, runMigrations } from '../../../src/database/data-source.js';
import { createTestDatabase, query } from '../../setup/database.js';

const SCHEMA_TABLES = [
  'audit_events',
  'authorization_codes',
  'authorizations',
  'browser_sessions',
  'clients',
  'delivery_cursors',
  'device_codes',
  'grants',
  'identity_providers',
  'login_failures',
  'notification_epoch',
  'notification_expiries',
  'notifications',
  'portal_users',
  'refresh_tokens',
  'relay_hand_overs',
  'relayed_tokens',
  'revoked_access_tokens',
  'signing_keys',
  'upstream_sessions',
  'upstream_sign_ins',
];

/** Every table in the public schema except TypeORM's own bookkeeping table. */
const tables = async (url: string) =>
  (
    await query<{ table_name: string }>(
      url,
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'migrations' ORDER BY table_name`,
    )
  ).map((row) => row.table_name);

const appliedCount = async (url: string) => Number((await query<{ n: string }>(url, 'SELECT count(*) AS n FROM migrations'))[0].n);

describe('migrations', () => {
  const opened: DataSource[] = [];
  const open = async (url: string) => {
    const dataSource = await new DataSource(await dataSourceOptions(url, 2)).initialize();
    opened.push(dataSource);
    return dataSource;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((dataSource) => dataSource.destroy()));
  });

  it('create every table of the schema on a fresh database', async () => {
    const url = await createTestDatabase();
    const dataSource = await open(url);
    expect(await tables(url)).toEqual([]);
    await runMigrations(dataSource);
    expect(await tables(url)).toEqual(SCHEMA_TABLES);
    expect(await appliedCount(url)).toBe(dataSource.migrations.length);
  });

  it('undo completely, dropping every table, and apply again afterwards', async () => {
    const url = await createTestDatabase();
    const dataSource = await open(url);
    await runMigrations(dataSource);
    for (const _ of dataSource.migrations) await dataSource.undoLastMigration();
    expect(await tables(url)).toEqual([]);
    expect(await appliedCount(url)).toBe(0);

    await runMigrations(dataSource);
    expect(await tables(url)).toEqual(SCHEMA_TABLES);
  });

  it('undo the OpenID client settings with a public client registered: it gets the empty hash no secret matches, and is disabled', async () => {
    const url = await createTestDatabase();
    const dataSource = await open(url);
    await runMigrations(dataSource);
    await query(url, `INSERT INTO clients (id, name, grants, secret_hash, token_endpoint_auth_method) VALUES ('phone', 'Phone', '{authorization_code}', NULL, 'none')`);
    await expect(query(url, `INSERT INTO clients (id, name, grants, secret_hash, token_endpoint_auth_method) VALUES ('half', 'Half', '{}', '\\x00', 'none')`)).rejects.toThrow(
      /clients_public_has_no_secret/,
    );
    // Down to just before it, whatever came after it.
    const hasSettings = async () => (await query(url, `SELECT 1 FROM information_schema.columns WHERE table_name = 'clients' AND column_name = 'token_endpoint_auth_method'`)).length > 0;
    while (await hasSettings()) await dataSource.undoLastMigration();
    expect(await query(url, `SELECT secret_hash, enabled FROM clients WHERE id = 'phone'`)).toEqual([{ secret_hash: Buffer.alloc(0), enabled: false }]);
    await runMigrations(dataSource);
    expect(await query(url, `SELECT token_endpoint_auth_method, secret_hash FROM clients WHERE id = 'phone'`)).toEqual([
      { token_endpoint_auth_method: 'client_secret_basic', secret_hash: Buffer.alloc(0) },
    ]);
  });

  it("move a standard request's sign-in out of its code's request into its own columns, and back on undo", async () => {
    const url = await createTestDatabase();
    const dataSource = await open(url);
    await runMigrations(dataSource);
    const hasSignIns = async () => (await query(url, `SELECT 1 FROM information_schema.columns WHERE table_name = 'authorization_codes' AND column_name = 'sid'`)).length > 0;
    while (await hasSignIns()) await dataSource.undoLastMigration();
    await query(url, `INSERT INTO clients (id, name, grants, secret_hash) VALUES ('app', 'App', '{authorization_code}', '\\x00')`);
    const [{ id: userId }] = await query<{ id: string }>(url, `INSERT INTO portal_users (username, password_hash) VALUES ('dora', 'x') RETURNING id`);
    const code = (hash: string, request: object | null) =>
      query(url, `INSERT INTO authorization_codes (code_hash, state_id, client_id, user_id, request, expires_at) VALUES ($1, $2, 'app', $3, $4, now() + interval '1 minute')`, [
        Buffer.from(hash),
        hash,
        userId,
        request,
      ]);
    await code('standard', { scope: 'openid', nonce: 'n-1', auth_time: 1700000000, sid: 'sid-1' });
    await code('helper', null);
    const codes = () => query(url, `SELECT convert_from(code_hash, 'UTF8') AS code, request, auth_time, sid FROM authorization_codes ORDER BY 1`);

    await runMigrations(dataSource);
    expect(await codes()).toEqual([
      { code: 'helper', request: null, auth_time: null, sid: null },
      { code: 'standard', request: { scope: 'openid', nonce: 'n-1' }, auth_time: new Date(1700000000 * 1000), sid: 'sid-1' },
    ]);

    // Undone back to before it, through any migration that came after.
    while (await hasSignIns()) await dataSource.undoLastMigration();
    expect(await query(url, `SELECT request FROM authorization_codes ORDER BY code_hash`)).toEqual([
      { request: null },
      { request: { scope: 'openid', nonce: 'n-1', auth_time: 1700000000, sid: 'sid-1' } },
    ]);
  });

  it('keep no address for the grants and refreshes made before the addresses were kept, and drop the addresses on undo', async () => {
    const url = await createTestDatabase();
    const dataSource = await open(url);
    await runMigrations(dataSource);
    const column = async (table: string, name: string) => (await query(url, `SELECT 1 FROM information_schema.columns WHERE table_name = $1 AND column_name = $2`, [table, name])).length > 0;
    while (await column('grants', 'created_address')) await dataSource.undoLastMigration();
    expect(await column('refresh_tokens', 'rotated_address')).toBe(false);
    await query(url, `INSERT INTO clients (id, name, grants, secret_hash) VALUES ('app', 'App', '{authorization_code}', '\\x00')`);
    const [{ id: userId }] = await query<{ id: string }>(url, `INSERT INTO portal_users (username, password_hash) VALUES ('dora', 'x') RETURNING id`);
    const [{ id: grantId }] = await query<{ id: string }>(url, `INSERT INTO grants (client_id, user_id) VALUES ('app', $1) RETURNING id`, [userId]);
    await query(url, `INSERT INTO refresh_tokens (token_hash, grant_id, client_id, expires_at, rotated_at) VALUES ('\\x01', $1, 'app', now() + interval '1 day', now())`, [grantId]);

    await runMigrations(dataSource);
    expect(await query(url, 'SELECT created_address FROM grants')).toEqual([{ created_address: null }]);
    expect(await query(url, 'SELECT rotated_address FROM refresh_tokens')).toEqual([{ rotated_address: null }]);
    await query(url, `UPDATE grants SET created_address = '2001:db8::7'`);
    expect(await query(url, 'SELECT created_address FROM grants')).toEqual([{ created_address: '2001:db8::7' }]);

    while (await column('grants', 'created_address')) await dataSource.undoLastMigration();
    expect(await column('refresh_tokens', 'rotated_address')).toBe(false);
    expect(await query(url, 'SELECT count(*)::int AS grants FROM grants')).toEqual([{ grants: 1 }]);
  });

  it('apply once when two instances migrate a fresh database at the same time', async () => {
    const url = await createTestDatabase();
    const [first, second] = await Promise.all([open(url), open(url)]);
    await Promise.all([runMigrations(first), runMigrations(second)]);
    expect(await tables(url)).toEqual(SCHEMA_TABLES);
    expect(await appliedCount(url)).toBe(first.migrations.length);
  });
});
