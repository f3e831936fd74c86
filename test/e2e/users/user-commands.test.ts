import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { CLI_TEST_TIMEOUT_MS, runCli as runBuiltCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

/** The portal-user commands of the admin CLI, beside a running service on the same database. */
describe('user:list and user:unlock', () => {
  let app: TestApp;
  let client: TestClient;
  let cwd: string;
  const runCli = (args: string[]) => runBuiltCli(args, { cwd, env: { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn' } });

  beforeAll(async () => {
    app = await startTestApp();
    client = await createClient(app);
    cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
  });
  afterAll(() => app?.close());

  it('user:list prints every user, oldest first, without passwords', async () => {
    const alice = await createUser(app, `alice-${Date.now()}`);
    const bob = await createUser(app, `bob-${Date.now()}`);
    const run = await runCli(['user:list']);
    expect(run.code, run.stderr).toBe(0);
    const users = JSON.parse(run.stdout) as Record<string, string>[];
    expect(users.map((user) => user.username)).toEqual(expect.arrayContaining([alice.username, bob.username]));
    expect(users.findIndex((user) => user.username === alice.username)).toBeLessThan(users.findIndex((user) => user.username === bob.username));
    for (const user of users) expect(Object.keys(user).sort()).toEqual(['created_at', 'enabled', 'id', 'provider', 'username']);
    expect(run.stdout).not.toMatch(/argon2|password/i);
  });

  it('user:unlock lets a user slowed down by wrong passwords sign in again at once, from that address', async () => {
    const user = await createUser(app);
    /** What the login page answers, as the user reads it. */
    const attempt = async (password: string) => {
      const response = await signIn((await issueState(app, client.id)).authorize_url, { ...user, password });
      const html = await response.text();
      return html.includes('Return to your device') ? 'signed in' : html.includes('Too many failed attempts') ? `slowed down (${response.status})` : `other (${response.status})`;
    };
    for (let i = 0; i < 5; i++) expect(await attempt('guessed wrong')).toBe('other (200)');
    expect(await attempt(user.password)).toBe('slowed down (429)');

    const run = await runCli(['user:unlock', '--username', user.username.toUpperCase()]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ username: user.username, cleared_slow_downs: 2 });
    expect(await attempt(user.password)).toBe('signed in');
  });

  it('user:unlock fails with exit 1 for an unknown user, or a name no user can have', async () => {
    for (const username of ['nobody-here', 'bad\u0001name', 'x'.repeat(5_000)]) {
      const run = await runCli(['user:unlock', '--username', username]);
      expect(run, username).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toMatch(/^error: no user named "/);
    }
  });
});
