import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectFailure, parseSuccess } from '../../setup/cli-results.js';
import { createTestDatabase, query } from '../../setup/database.js';
import { CLI_TEST_TIMEOUT_MS, runCli as runBuiltCli } from '../../setup/processes.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

// A client's own heartbeat on its notification streams, as operators set it: --heartbeat at
// client:create and client:update, through the built CLI, each command line run in this process (runCli).

let databaseUrl: string;
let cwd: string;
const runCli = (args: string[], stdin?: string) => runBuiltCli(args, { cwd, stdin, env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' } });
const clientRows = async () => query(databaseUrl, 'SELECT * FROM clients ORDER BY created_at');

type ClientView = { client_id: string; name: string; heartbeat_interval: number | null };

const REFUSED = /the heartbeat \(--heartbeat\) must be whole seconds from 5 to 3600, or default/;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
});
afterAll(async () => {
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('client:create --heartbeat', () => {
  it('stores the seconds; client:show and client:list show them; without it (or with default) the client has none (null)', async () => {
    const satellite = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Satellite ship', '--heartbeat', '300']));
    expect(satellite.heartbeat_interval).toBe(300);
    expect(parseSuccess<ClientView>(await runCli(['client:show', satellite.client_id])).heartbeat_interval).toBe(300);
    const listed = parseSuccess<ClientView[]>(await runCli(['client:list']));
    expect(listed.find((client) => client.client_id === satellite.client_id)?.heartbeat_interval).toBe(300);
    expect(parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Shore office'])).heartbeat_interval).toBeNull();
    expect(parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Harbour', '--heartbeat', 'default'])).heartbeat_interval).toBeNull();
    const [row] = await query<{ heartbeat_interval: number | null }>(databaseUrl, 'SELECT heartbeat_interval FROM clients WHERE id = $1', [satellite.client_id]);
    expect(row.heartbeat_interval).toBe(300);
  }, 60_000);

  it('client:list --format table shows the heartbeat column once a client has one', async () => {
    const table = (await runCli(['client:list', '--format', 'table'])).stdout;
    expect(table.split('\n')[0].split(/\s{2,}/)).toContain('heartbeat_interval');
  });

  it('takes heartbeat from a --file line', async () => {
    const [fromFile] = parseSuccess<ClientView[]>(await runCli(['client:create', '--file', '-'], JSON.stringify({ name: 'Tug', heartbeat: '3600' })));
    expect(parseSuccess<ClientView>(await runCli(['client:show', fromFile.client_id])).heartbeat_interval).toBe(3600);
  });

  it('refuses seconds out of 5 to 3600, and anything not whole seconds, and registers nothing', async () => {
    const before = await clientRows();
    for (const value of ['4', '0', '3601', '-5', '1.5', '30s', 'abc', '', '99999999999']) {
      expectFailure(await runCli(['client:create', '--name', 'Refused', '--heartbeat', value]), REFUSED);
    }
    const fromFile = await runCli(['client:create', '--file', '-'], JSON.stringify({ name: 'Refused', heartbeat: '2' }));
    expect(fromFile).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/line 1: the heartbeat \(--heartbeat\) must be whole seconds/) });
    expect(await clientRows()).toEqual(before);
  }, 60_000);
});

describe('client:update --heartbeat', () => {
  it('changes the seconds, and default takes the client back to the instance default (null)', async () => {
    const created = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Coaster']));
    expect(parseSuccess<ClientView>(await runCli(['client:update', created.client_id, '--heartbeat', '5'])).heartbeat_interval).toBe(5);
    expect(parseSuccess<ClientView>(await runCli(['client:show', created.client_id])).heartbeat_interval).toBe(5);
    expect(parseSuccess<ClientView>(await runCli(['client:update', created.client_id, '--heartbeat', 'default'])).heartbeat_interval).toBeNull();
    expect(parseSuccess<ClientView>(await runCli(['client:show', created.client_id])).heartbeat_interval).toBeNull();
  });

  it('refuses seconds out of 5 to 3600, alone or beside another change, and changes nothing', async () => {
    const created = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Ferry', '--heartbeat', '600']));
    const before = await clientRows();
    for (const value of ['4', '3601', 'never', '']) {
      expectFailure(await runCli(['client:update', created.client_id, '--heartbeat', value]), REFUSED);
    }
    expectFailure(await runCli(['client:update', created.client_id, '--heartbeat', '2', '--name', 'Renamed ferry']), REFUSED);
    expect(await clientRows()).toEqual(before);
  });
});
