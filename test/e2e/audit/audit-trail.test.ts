import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HousekeepingService } from '../../../src/database/housekeeping.service.js';
import { createClient } from '../../factories/oauth.factory.js';
import { issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT, refresh } from '../../factories/token-flow.factory.js';
import { expectFailure, parseSuccess } from '../../setup/cli-results.js';
import { query } from '../../setup/database.js';
import { CLI_TEST_TIMEOUT_MS, runCli as runBuiltCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

type AuditEvent = { id: string; at: string; actor: Record<string, string>; action: string; username: string | null; client_id: string | null; target: string | null; details: Record<string, unknown> };

// The audit trail as an operator reads it: what the CLI changed, recorded with the OS user who ran
// it, in the change's own transaction, listed by events:list, and purged after AUDIT_RETENTION.

describe('the audit trail', () => {
  let app: TestApp;
  let cwd: string;
  /** The CLI as `deckofficer` runs it through sudo. */
  const cli = (args: string[], stdin?: string) => runBuiltCli(args, { cwd, stdin, env: { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn', SUDO_USER: 'deckofficer' } });
  const events = async (...filters: string[]) => parseSuccess<AuditEvent[]>(await cli(['events:list', ...filters]));

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    cwd = await mkdtemp(join(tmpdir(), 'vc-audit-'));
  });
  afterAll(async () => {
    await app?.close();
    await rm(cwd, { recursive: true, force: true });
  });

  it('records what an operator changed with the CLI, as theirs, never a secret; events:list filters by user, client and time', async () => {
    const client = parseSuccess<{ client_id: string; client_secret: string }>(await cli(['client:create', '--name', 'Audited device', '--redirect', LOOPBACK_PATTERN]));
    parseSuccess(await cli(['user:create', '--username', 'Dora'], 'correct horse battery staple\n'));
    parseSuccess(await cli(['user:disable', '--username', 'dora']));
    parseSuccess(await cli(['client:rotate-secret', client.client_id]));

    const dora = await events('--username', 'DORA');
    expect(dora.map((event) => event.action)).toEqual(['user.disabled', 'user.created']);
    for (const event of dora) expect(event.actor).toEqual({ kind: 'operator', name: 'deckofficer' });
    expect(dora[0].details).toEqual({ revoked_grants: 0 });

    const ofClient = await events('--client', client.client_id);
    expect(ofClient.map((event) => event.action)).toEqual(['client.secret_rotated', 'client.created']);
    expect(ofClient[1].details).toMatchObject({ name: 'Audited device', grants: ['authorization_code', 'refresh_token'] });
    const stored = JSON.stringify(await query(app.databaseUrl, 'SELECT * FROM audit_events'));
    expect(stored).not.toContain(client.client_secret);
    expect(stored).not.toContain('correct horse battery staple');

    expect((await events('--since', '1h')).length).toBeGreaterThanOrEqual(4);
    expect(await events('--since', new Date(Date.now() + 60_000).toISOString())).toEqual([]);
    const [newest, older] = await events('--limit', '2');
    expect((await events('--after', newest.id, '--limit', '1'))[0].id).toBe(older.id);

    const table = await cli(['events:list', '--username', 'dora', '--format', 'table']);
    expect(table.stdout.split('\n')[0]).toMatch(/^id\s+at\s+by\s+action\s+username/);
    expect(table.stdout).toContain('operator deckofficer');
  });

  it('refuses a filter that could only be a mistake, with the CLI\'s error', async () => {
    for (const filter of [['--since', 'yesterday'], ['--since', '03/04/2026'], ['--limit', '0'], ['--limit', '5000'], ['--after', 'x'], ['--username', '']]) {
      expectFailure(await cli(['events:list', ...filter]));
    }
  });

  it('records nothing for a change that failed, and makes no change it could not record', async () => {
    const before = await query(app.databaseUrl, 'SELECT count(*) FROM audit_events');
    expectFailure(await cli(['user:create', '--username', 'dora'], 'another good password\n'), /already exists/);
    expectFailure(await cli(['client:disable', 'no-such-client']));
    expect(await query(app.databaseUrl, 'SELECT count(*) FROM audit_events')).toEqual(before);

    // The audit trail refuses the row: the sign-out it would record does not happen either.
    const device = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    parseSuccess(await cli(['user:create', '--username', 'erin'], 'correct horse battery staple\n'));
    const tokens = await issueTokens(app, device, { username: 'erin', password: 'correct horse battery staple' }, { redirectUrl: LOOPBACK_REDIRECT });
    await query(app.databaseUrl, "ALTER TABLE audit_events ADD CONSTRAINT refuse_disabling CHECK (action <> 'user.disabled') NOT VALID");
    try {
      expectFailure(await cli(['user:disable', '--username', 'erin']));
    } finally {
      await query(app.databaseUrl, 'ALTER TABLE audit_events DROP CONSTRAINT refuse_disabling');
    }
    expect(await query(app.databaseUrl, "SELECT disabled_at FROM portal_users WHERE username = 'erin'")).toEqual([{ disabled_at: null }]);
    expect((await refresh(app, device, tokens.refresh_token)).status).toBe(200);
  });

  it('is purged by the housekeeping after AUDIT_RETENTION, newer events kept', async () => {
    parseSuccess(await cli(['user:create', '--username', 'frank'], 'correct horse battery staple\n'));
    await query(app.databaseUrl, `UPDATE audit_events SET at = now() - make_interval(secs => $1 + 60) WHERE username = 'frank'`, [app.env.AUDIT_RETENTION]);
    const kept = Number((await query<{ count: string }>(app.databaseUrl, "SELECT count(*) FROM audit_events WHERE username IS DISTINCT FROM 'frank'"))[0].count);
    await app.get(HousekeepingService).purge();
    expect(await query(app.databaseUrl, "SELECT 1 FROM audit_events WHERE username = 'frank'")).toEqual([]);
    expect(Number((await query<{ count: string }>(app.databaseUrl, 'SELECT count(*) FROM audit_events'))[0].count)).toBe(kept);
  });
});
