import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectFailure, parseSuccess } from '../../setup/cli-results.js';
import { createTestDatabase, query } from '../../setup/database.js';
import { CLI_TEST_TIMEOUT_MS, runCli as runBuiltCli } from '../../setup/processes.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

// What the approval page shows for each scope, as operators set it: the built CLI, each command line run in this process (runCli).

let databaseUrl: string;
let cwd: string;
const runCli = (args: string[]) => runBuiltCli(args, { cwd, env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' } });
const clientNames = async () => (await query<{ name: string }>(databaseUrl, 'SELECT name FROM clients ORDER BY created_at')).map((row) => row.name);

type ClientView = { client_id: string; scopes: string[]; scope_descriptions: Record<string, string> };

const VOYAGES = 'See your voyages, their routes and their port calls';

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
});
afterAll(async () => {
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('client:create --scope-description', () => {
  let created: ClientView;

  it('stores a description per scope, repeatable, and client:show and client:list --format json list them', async () => {
    created = parseSuccess<ClientView>(
      await runCli([
        'client:create', '--name', 'Bridge display', '--grant', 'device_code',
        '--scope', 'voyages:read', '--scope', 'reports:read', '--scope', 'profile',
        '--scope-description', `voyages:read=${VOYAGES}`,
        '--scope-description', 'reports:read=Read the reports = the noon and arrival reports of your ship',
      ]),
    );
    const descriptions = { 'voyages:read': VOYAGES, 'reports:read': 'Read the reports = the noon and arrival reports of your ship' };
    expect(created.scope_descriptions).toEqual(descriptions);
    expect(parseSuccess<ClientView>(await runCli(['client:show', created.client_id])).scope_descriptions).toEqual(descriptions);
    const [listed] = parseSuccess<ClientView[]>(await runCli(['client:list', '--format', 'json']));
    expect(listed.scope_descriptions).toEqual(descriptions);
  }, 60_000);

  it('lists an empty object for a client without descriptions', async () => {
    expect(parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Plain', '--scope', 'profile'])).scope_descriptions).toEqual({});
  });

  it('refuses a description it could not show, saying why, and registers nothing', async () => {
    const refusals: [string[], RegExp][] = [
      [['--scope', 'a', '--scope-description', 'b=Text'], /the description of scope "b" is for a scope the client does not have \(its scopes: a\)/],
      [['--scope-description', 'a=Text'], /scope "a" is for a scope the client does not have \(its scopes: none\)/],
      [['--scope', 'a', '--scope-description', 'a'], /--scope-description takes SCOPE=TEXT/],
      [['--scope', 'a', '--scope-description', '=Text'], /--scope-description takes SCOPE=TEXT/],
      [['--scope', 'a', '--scope-description', 'a='], /the description of scope "a" must be 1 to 200 characters \(it has 0\)/],
      [['--scope', 'a', '--scope-description', `a=${'x'.repeat(201)}`], /must be 1 to 200 characters \(it has 201\)/],
      [['--scope', 'a', '--scope-description', 'a= padded'], /must not start or end with whitespace/],
      [['--scope', 'a', '--scope-description', 'a=two\u0007lines'], /must be one line, without control characters/],
      [['--scope', 'a', '--scope-description', 'a=One', '--scope-description', 'a=Two'], /gives scope "a" twice/],
    ];
    const before = await clientNames();
    for (const [options, message] of refusals) expectFailure(await runCli(['client:create', '--name', `Refused ${options.join(' ').length}`, ...options]), message);
    expect(await clientNames()).toEqual(before);
  }, 120_000);

  describe('client:update --scope-description', () => {
    it('sets the descriptions named, keeps the others, removes one given empty, and drops those of scopes taken away', async () => {
      const id = created.client_id;
      const set = parseSuccess<ClientView>(await runCli(['client:update', id, '--scope-description', 'profile=Your name and email address']));
      expect(set.scope_descriptions).toEqual({ ...created.scope_descriptions, profile: 'Your name and email address' });

      const removed = parseSuccess<ClientView>(await runCli(['client:update', id, '--scope-description', 'profile=']));
      expect(removed.scope_descriptions).toEqual(created.scope_descriptions);

      const narrowed = parseSuccess<ClientView>(await runCli(['client:update', id, '--scope', 'voyages:read', '--scope', 'profile']));
      expect(narrowed.scope_descriptions).toEqual({ 'voyages:read': VOYAGES });

      const withNewScope = parseSuccess<ClientView>(await runCli(['client:update', id, '--scope', 'voyages:read', '--scope', 'crew:read', '--scope-description', 'crew:read=See the crew list']));
      expect(withNewScope).toMatchObject({ scopes: ['voyages:read', 'crew:read'], scope_descriptions: { 'voyages:read': VOYAGES, 'crew:read': 'See the crew list' } });
    }, 60_000);

    it('refuses a description for a scope the client does not have, changing nothing', async () => {
      const before = await query(databaseUrl, 'SELECT * FROM clients WHERE id = $1', [created.client_id]);
      expectFailure(await runCli(['client:update', created.client_id, '--scope-description', 'reports:read=Gone']), /scope "reports:read" is for a scope the client does not have/);
      expectFailure(await runCli(['client:update', created.client_id, '--scope-description', 'crew:read=escape\u001b[31m']), /without control characters/);
      expect(await query(databaseUrl, 'SELECT * FROM clients WHERE id = $1', [created.client_id])).toEqual(before);
    });
  });
});
