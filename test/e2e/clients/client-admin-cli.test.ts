import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { clientToken, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import { credentials, issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT, postForm, refresh } from '../../factories/token-flow.factory.js';
import { expectFailure, parseSuccess } from '../../setup/cli-results.js';
import { query } from '../../setup/database.js';
import { startSecondInstance } from '../../setup/instances.js';
import { CLI_TEST_TIMEOUT_MS, runCli as runBuiltCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

const HISTORY = '/voyage/notification/v1/notifications?since=2020-01-01T00:00:00.000Z';

const historyStatus = async (app: TestApp, token: string) =>
  (await fetch(`${app.baseUrl}${HISTORY}`, { headers: { authorization: `Bearer ${token}` } })).status;

/** Resolves with the close code, or 'open' if the stream is still open after `ms`. */
const closedWithin = (stream: Stream, ms: number) =>
  Promise.race([stream.closed.then(({ code }) => code), new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), ms))]);

const helperConfig = (app: TestApp, clientId: string, redirectUrl?: string) =>
  postForm(app, `/external/oauth2helper/config/${encodeURIComponent(clientId)}${redirectUrl ? `?redirect_url=${encodeURIComponent(redirectUrl)}` : ''}`, '');

const clientCredentialsStatus = async (app: TestApp, client: TestClient) =>
  (await postForm(app, '/public/api/oauth2/token', { grant_type: 'client_credentials', ...credentials(client) })).status;

type ClientView = { client_id: string; name: string; grants: string[]; redirect_patterns: string[]; scopes: string[]; enabled: boolean; updated_at: string };

/** client:update and client:delete run as operators run them, beside two instances of the service on one database. */
let a: TestApp;
let b: TestApp;
let cwd: string;
const runCli = (args: string[]) => runBuiltCli(args, { cwd, env: { DATABASE_URL: a.databaseUrl, LOG_LEVEL: 'warn' } });
const storedClient = async (id: string) => (await query(a.databaseUrl, 'SELECT * FROM clients WHERE id = $1', [id]))[0];

beforeAll(async () => {
  a = await startTestApp();
  b = await startSecondInstance(a);
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
});
afterAll(async () => {
  await b?.close();
  await a?.close();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('client:update', () => {
  it('changes the name, grants, redirects and scopes; each list given replaces the stored one', async () => {
    const client = await createClient(a, { grants: ['authorization_code'], redirectPatterns: ['http://10.0.0.1/cb'], scopes: ['one', 'two'] });
    const updated = parseSuccess<ClientView>(
      await runCli(['client:update', client.id, '--name', `Renamed ${client.id}`, '--grant', 'device_code', '--grant', 'refresh_token', '--scope', 'three']),
    );
    expect(updated).toMatchObject({
      client_id: client.id,
      name: `Renamed ${client.id}`,
      grants: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
      redirect_patterns: ['http://10.0.0.1/cb'],
      scopes: ['three'],
      enabled: true,
    });
    expect(updated).not.toHaveProperty('client_secret');
    expect(parseSuccess(await runCli(['client:show', client.id]))).toEqual(updated);

    const cleared = parseSuccess<ClientView>(await runCli(['client:update', client.id, '--clear-redirects', '--clear-scopes']));
    expect(cleared).toMatchObject({ redirect_patterns: [], scopes: [], grants: updated.grants });
  });

  it('refuses bad values with a clear error and changes nothing', async () => {
    const other = await createClient(a);
    const client = await createClient(a, { redirectPatterns: ['http://10.0.0.1/cb'], scopes: ['one'] });
    const before = await storedClient(client.id);
    const otherName = (await storedClient(other.id)).name as string;
    const refusals: [string[], RegExp][] = [
      [[], /nothing to change/],
      [['--grant', 'password'], /grant must be one of/],
      [['--grant', 'authorization_code', '--grant', 'authorization_code'], /grants/],
      [['--redirect', 'http://8.8.8.0/24:*/cb'], /redirect pattern "http:\/\/8\.8\.8\.0\/24:\*\/cb" address range must lie within private/],
      [['--redirect', 'http://example.com/*'], /may contain \* only as the port/],
      [['--scope', 'a"b'], /scope token/],
      [['--name', ' padded'], /whitespace/],
      [['--name', 'bell\u0007name'], /control characters/],
      [['--name', 'x'.repeat(101)], /name must be shorter than or equal to 100 characters/],
      [['--name', otherName.toUpperCase()], /already exists/],
      [['--redirect', 'http://10.0.0.2/cb', '--clear-redirects'], /contradict/],
      [['--bogus'], /--bogus/],
    ];
    for (const [options, message] of refusals) {
      const run = await runCli(['client:update', client.id, ...options]);
      if (options[0] === '--bogus') expect(run).toMatchObject({ code: 1, stdout: '' });
      else expectFailure(run, message);
    }
    expect(await storedClient(client.id)).toEqual(before);
    // Twelve CLI runs in a row (about a second each): room for a slow machine.
  }, 90_000);

  it('fails for an unknown id, and for a name with control characters no id can have', async () => {
    expectFailure(await runCli(['client:update', 'no-such-client', '--name', 'x']), /no client with id "no-such-client"/);
    expectFailure(await runCli(['client:update', 'bad\u0001id', '--name', 'x']), /no client with id/);
  });

  it('a grant taken away is refused from the next request on, on every instance', async () => {
    const client = await createClient(a, { grants: ['client_credentials', 'authorization_code'] });
    expect(await clientCredentialsStatus(b, client)).toBe(200); // B has the client cached now
    parseSuccess(await runCli(['client:update', client.id, '--grant', 'authorization_code']));
    await expect.poll(async () => (await postForm(b, '/public/api/oauth2/token', { grant_type: 'client_credentials', ...credentials(client) })).body, { timeout: 2_000, interval: 50 }).toMatchObject({
      error: 'unauthorized_client',
    });
  });

  it('a redirect pattern taken away is refused from the next request on, on every instance', async () => {
    const client = await createClient(a, { redirectPatterns: [LOOPBACK_PATTERN, 'http://10.0.0.1/cb'] });
    expect((await helperConfig(b, client.id, LOOPBACK_REDIRECT)).status).toBe(200);
    parseSuccess(await runCli(['client:update', client.id, '--redirect', 'http://10.0.0.1/cb']));
    await expect.poll(async () => (await helperConfig(b, client.id, LOOPBACK_REDIRECT)).body, { timeout: 2_000, interval: 50 }).toMatchObject({
      error: 'invalid_request',
    });
    expect((await helperConfig(b, client.id, 'http://10.0.0.1/cb')).status).toBe(200);
  });

  it('a scope taken away ends at once: tokens issued before are refused where it is needed, and open streams close', async () => {
    const client = await createClient(a, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE, 'reports:read'] });
    const token = await clientToken(b, client, SUBSCRIBE_SCOPE);
    const stream = await openStream(b.baseUrl, token);
    expect(await historyStatus(b, token)).toBe(200);
    parseSuccess(await runCli(['client:update', client.id, '--scope', 'reports:read']));
    expect(await closedWithin(stream, 2_000)).toBe(1008);
    expect(await historyStatus(b, token)).toBe(403);
    expect(await historyStatus(a, token)).toBe(403);
    parseSuccess(await runCli(['client:update', client.id, '--scope', SUBSCRIBE_SCOPE]));
    await expect.poll(() => historyStatus(b, token), { timeout: 2_000, interval: 50 }).toBe(200);
  });
});

describe('client:delete', () => {
  it("revokes the client's grants, closes its streams on every instance, and leaves its id and secret unknown", async () => {
    const client = await createClient(a, {
      grants: ['authorization_code', 'refresh_token', 'client_credentials'],
      redirectPatterns: [LOOPBACK_PATTERN],
      scopes: [SUBSCRIBE_SCOPE],
    });
    const user = await createUser(a);
    const userTokens = await issueTokens(a, client, user, { redirectUrl: LOOPBACK_REDIRECT, scope: SUBSCRIBE_SCOPE });
    const serviceToken = await clientToken(b, client);
    const streams = [await openStream(a.baseUrl, userTokens.access_token), await openStream(b.baseUrl, serviceToken)];
    const [{ name }] = await query<{ name: string }>(a.databaseUrl, 'SELECT name FROM clients WHERE id = $1', [client.id]);

    const run = await runCli(['client:delete', client.id]);
    expect(parseSuccess(run)).toEqual({ client_id: client.id, name, deleted_at: expect.any(String), revoked_grants: 1 });
    expect(run.stdout).not.toContain(client.secret);

    for (const stream of streams) expect(await closedWithin(stream, 2_000)).toBe(1008);
    for (const app of [a, b]) {
      expect(await historyStatus(app, userTokens.access_token)).toBe(401);
      expect(await historyStatus(app, serviceToken)).toBe(401);
      expect(await refresh(app, client, userTokens.refresh_token)).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
      expect(await clientCredentialsStatus(app, client)).toBe(401);
      expect(await helperConfig(app, client.id)).toMatchObject({ status: 404, body: { error: 'invalid_client' } });
    }
    await expect(openStream(b.baseUrl, serviceToken)).rejects.toThrow(/401/);
    const grants = await query<{ revoked_at: Date | null }>(a.databaseUrl, 'SELECT revoked_at FROM grants WHERE client_id = $1', [client.id]);
    expect(grants).toEqual([{ revoked_at: expect.any(Date) }]);

    expectFailure(await runCli(['client:show', client.id]), /no client with id/);
    expect(parseSuccess<ClientView[]>(await runCli(['client:list'])).map((listed) => listed.client_id)).not.toContain(client.id);
    expectFailure(await runCli(['client:delete', client.id]), /no client with id/);
    expectFailure(await runCli(['client:update', client.id, '--name', 'Back']), /no client with id/);
    expectFailure(await runCli(['client:enable', client.id]), /no client with id/);
    expectFailure(await runCli(['client:rotate-secret', client.id]), /no client with id/);
  });

  it('keeps no secret, and frees the name for a new client', async () => {
    const client = await createClient(a);
    const [{ name }] = await query<{ name: string }>(a.databaseUrl, 'SELECT name FROM clients WHERE id = $1', [client.id]);
    parseSuccess(await runCli(['client:delete', client.id]));
    const [tombstone] = await query<{ secret_hash: Buffer; previous_secret_hash: Buffer | null; enabled: boolean; grants: string[] }>(
      a.databaseUrl,
      'SELECT secret_hash, previous_secret_hash, enabled, grants FROM clients WHERE id = $1',
      [client.id],
    );
    expect(tombstone).toEqual({ secret_hash: Buffer.alloc(0), previous_secret_hash: null, enabled: false, grants: [] });
    const again = parseSuccess<ClientView>(await runCli(['client:create', '--name', name]));
    expect(again.client_id).not.toBe(client.id);
  });

  it('refuses notifications for a deleted client', async () => {
    const client = await createClient(a);
    parseSuccess(await runCli(['client:delete', client.id]));
    const publisher = await createClient(a, { grants: ['client_credentials'], scopes: ['notification:publish'] });
    const token = await clientToken(a, publisher, 'notification:publish');
    const response = await fetch(`${a.baseUrl}/voyage/notification/v1/notifications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(validNotification(client.id)),
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('recipient must be the client_id of a registered client');
  });

  it('fails for an unknown id or without one', async () => {
    expectFailure(await runCli(['client:delete', 'no-such-client']), /no client with id "no-such-client"/);
    expect(await runCli(['client:delete'])).toMatchObject({ code: 1, stdout: '' });
  });
});
