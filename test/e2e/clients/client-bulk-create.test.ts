import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hashClientSecret } from '../../../src/clients/client-secret.js';
import { expectFailure, parseSuccess } from '../../setup/cli-results.js';
import { createTestDatabase, query } from '../../setup/database.js';
import { CLI_TEST_TIMEOUT_MS, runCli as runBuiltCli } from '../../setup/processes.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

/** client:create --file: many clients from JSON lines, checked first, then created all at once. */
let databaseUrl: string;
let cwd: string;
const runCli = (args: string[], stdin?: string) => runBuiltCli(args, { cwd, stdin, env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' } });
const names = async () => (await query<{ name: string }>(databaseUrl, 'SELECT name FROM clients ORDER BY name')).map((row) => row.name);
const lines = (...records: unknown[]) => records.map((record) => (typeof record === 'string' ? record : JSON.stringify(record))).join('\n') + '\n';

type Created = { client_id: string; client_secret: string; name: string; grants: string[]; redirect_patterns: string[]; scopes: string[] };

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
});
afterAll(async () => {
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('client:create --file', () => {
  it('creates one client per line, with the options as fields, and prints each id and secret once', async () => {
    await writeFile(
      join(cwd, 'clients.jsonl'),
      lines(
        { name: 'Galley TV', grant: ['device_code', 'refresh_token'], scope: 'notification:subscribe', 'scope-description': 'notification:subscribe=Receive report notifications' },
        '',
        { name: 'Planner', redirect: ['http://127.0.0.1/cb'] },
      ),
    );
    const run = await runCli(['client:create', '--file', 'clients.jsonl']);
    const created = parseSuccess<Created[]>(run);
    expect(created).toEqual([
      expect.objectContaining({
        name: 'Galley TV',
        grants: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        scopes: ['notification:subscribe'],
        scope_descriptions: { 'notification:subscribe': 'Receive report notifications' },
        redirect_patterns: [],
      }),
      expect.objectContaining({ name: 'Planner', grants: ['authorization_code', 'refresh_token'], redirect_patterns: ['http://127.0.0.1/cb'] }),
    ]);
    for (const client of created) {
      expect(client.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const [row] = await query<{ secret_hash: Buffer }>(databaseUrl, 'SELECT secret_hash FROM clients WHERE id = $1', [client.client_id]);
      expect(row.secret_hash.equals(hashClientSecret(client.client_secret))).toBe(true);
    }
    expect(run.stderr).not.toContain(created[0].client_secret);
  }, 60_000);

  it('reads stdin for -, and prints a table of ids, secrets and names with --format table', async () => {
    const run = await runCli(['client:create', '--file', '-', '--format', 'table'], lines({ name: 'From stdin '.padEnd(99, 'x') }));
    expect(run.code, run.stderr).toBe(0);
    const [header, , row] = run.stdout.trimEnd().split('\n');
    expect(header.split(/\s{2,}/)).toEqual(['client_id', 'client_secret', 'name']);
    expect(row).toMatch(/^[\w-]{22} {2}[\w-]{43} {2}From stdin x+…$/);
    expect(row.length).toBeLessThanOrEqual(100);
  }, 60_000);

  it('reports every bad line by its number and creates nothing, not even the good lines', async () => {
    const before = await names();
    await writeFile(
      join(cwd, 'bad.jsonl'),
      lines({ name: 'Good One' }, 'not json', { name: 'good one' }, { nme: 'typo' }, { name: 'Bad Grant', grant: 'password' }, [1], { name: 'Bad Range', redirect: 'http://8.8.8.0/24:*/cb' }, {
        name: 'File Inside',
        file: 'x',
      }),
    );
    const run = await runCli(['client:create', '--file', 'bad.jsonl']);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toBe(
      [
        'error: 7 of 8 lines refused; no client was created:',
        '  line 2: not JSON: Unexpected token \'o\', "not json" is not valid JSON',
        '  line 3: the name "good one" is also on line 1',
        '  line 4: unknown field "nme" (fields: name, grant, redirect, scope, scope-description, sign-in, public, post-logout-redirect, id-token-alg, heartbeat)',
        '  line 5: grant must be one of: authorization_code, refresh_token, client_credentials, urn:ietf:params:oauth:grant-type:device_code',
        '  line 6: must be a JSON object',
        '  line 7: redirect pattern "http://8.8.8.0/24:*/cb" address range must lie within private or loopback addresses',
        '  line 8: unknown field "file" (fields: name, grant, redirect, scope, scope-description, sign-in, public, post-logout-redirect, id-token-alg, heartbeat)',
        '',
      ].join('\n'),
    );
    expect(await names()).toEqual(before);
  }, 60_000);

  it('refuses a name already taken, naming its line, and creates nothing', async () => {
    const before = await names();
    await writeFile(join(cwd, 'taken.jsonl'), lines({ name: 'Fresh' }, { name: 'PLANNER' }));
    expectFailure(await runCli(['client:create', '--file', 'taken.jsonl']), /^error: line 2: a client named "PLANNER" already exists; no client was created$/m);
    expect(await names()).toEqual(before);
  }, 60_000);

  it('refuses an empty or missing file, and other options beside --file', async () => {
    await writeFile(join(cwd, 'empty.jsonl'), '\n\n');
    expectFailure(await runCli(['client:create', '--file', 'empty.jsonl']), /holds no client/);
    expectFailure(await runCli(['client:create', '--file', 'missing.jsonl']), /cannot read missing\.jsonl/);
    expectFailure(await runCli(['client:create', '--file', 'empty.jsonl', '--name', 'X']), /give no other option with it/);
  }, 60_000);

  it('provisions 300 clients in one process', async () => {
    const file = Array.from({ length: 300 }, (_, index) => ({ name: `Cabin ${index}`, grant: ['device_code', 'refresh_token'], scope: 'notification:subscribe' }));
    await writeFile(join(cwd, 'many.jsonl'), lines(...file));
    const started = performance.now();
    const created = parseSuccess<Created[]>(await runCli(['client:create', '--file', 'many.jsonl']));
    const seconds = (performance.now() - started) / 1000;
    console.log(`client:create --file: 300 clients in ${seconds.toFixed(1)} s`);
    expect(created).toHaveLength(300);
    expect(new Set(created.map((client) => client.client_secret)).size).toBe(300);
    expect((await names()).filter((name) => name.startsWith('Cabin '))).toHaveLength(300);
  }, 60_000);
});
