import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectFailure, parseSuccess } from '../../setup/cli-results.js';
import { createTestDatabase, query } from '../../setup/database.js';
import { CLI_TEST_TIMEOUT_MS, runCli as runBuiltCli } from '../../setup/processes.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

// What OpenID Connect needs of a client, as operators set it: public clients, post-logout
// redirect URLs and the ID token algorithm, through the built CLI, each command line run in this process (runCli).

let databaseUrl: string;
let cwd: string;
const runCli = (args: string[], stdin?: string) => runBuiltCli(args, { cwd, stdin, env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' } });
const clientRows = async () => query(databaseUrl, 'SELECT * FROM clients ORDER BY created_at');

type ClientView = {
  client_id: string;
  name: string;
  grants: string[];
  client_secret?: string;
  token_endpoint_auth_method: string;
  post_logout_redirect_uris: string[];
  id_token_signed_response_alg: string;
};

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
});
afterAll(async () => {
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('client:create --public', () => {
  let created: ClientView;

  it('registers a client without a secret: no client_secret printed, token_endpoint_auth_method none, no hash stored', async () => {
    created = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Phone app', '--public', '--redirect', 'http://127.0.0.0/8:*/callback']));
    expect(created).not.toHaveProperty('client_secret');
    expect(created).toMatchObject({ name: 'Phone app', grants: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'none' });
    expect(parseSuccess<ClientView>(await runCli(['client:show', created.client_id]))).toEqual(created);
    const listed = parseSuccess<ClientView[]>(await runCli(['client:list']));
    expect(listed.find((client) => client.client_id === created.client_id)).toEqual(created);
    const [row] = await query<{ secret_hash: Buffer | null; previous_secret_hash: Buffer | null }>(
      databaseUrl,
      'SELECT secret_hash, previous_secret_hash FROM clients WHERE id = $1',
      [created.client_id],
    );
    expect(row).toEqual({ secret_hash: null, previous_secret_hash: null });
  }, 60_000);

  it('shows a confidential client as client_secret_basic, with its secret printed once', async () => {
    const confidential = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Back office']));
    expect(confidential).toMatchObject({ token_endpoint_auth_method: 'client_secret_basic', client_secret: expect.any(String) });
    expect(parseSuccess<ClientView>(await runCli(['client:show', confidential.client_id]))).not.toHaveProperty('client_secret');
  });

  it('client:list --format table names the authentication method once a client is public', async () => {
    const table = (await runCli(['client:list', '--format', 'table'])).stdout;
    expect(table).toContain('token_endpoint_auth_method');
  });

  it('refuses to rotate the secret of a public client, and changes nothing', async () => {
    const before = await clientRows();
    expectFailure(await runCli(['client:rotate-secret', created.client_id]), /a public client has no secret to rotate/);
    expect(await clientRows()).toEqual(before);
  });

  it('refuses client_credentials for a public client, at create and at update, and changes nothing', async () => {
    const before = await clientRows();
    expectFailure(await runCli(['client:create', '--name', 'Public service', '--public', '--grant', 'client_credentials']), /a public client cannot use client_credentials/);
    const fromFile = await runCli(['client:create', '--file', '-'], JSON.stringify({ name: 'Public service', public: true, grant: ['client_credentials'] }));
    expect(fromFile).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/line 1: a public client cannot use client_credentials/) });
    expectFailure(await runCli(['client:update', created.client_id, '--grant', 'client_credentials']), /a public client cannot use client_credentials/);
    expect(await clientRows()).toEqual(before);
  });

  it('refuses to make a client public or confidential afterwards, and changes nothing', async () => {
    const confidential = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Stays confidential']));
    const before = await clientRows();
    for (const id of [confidential.client_id, created.client_id]) {
      expectFailure(await runCli(['client:update', id, '--public']), /whether a client is public cannot change/);
      expectFailure(await runCli(['client:update', id, '--public', '--name', 'Renamed']), /whether a client is public cannot change/);
    }
    expect(await clientRows()).toEqual(before);
  });

  it('takes public from a --file line, and deletes a public client like any other', async () => {
    const [fromFile] = parseSuccess<ClientView[]>(await runCli(['client:create', '--file', '-'], JSON.stringify({ name: 'Tablet app', public: true })));
    expect(fromFile).toMatchObject({ name: 'Tablet app', token_endpoint_auth_method: 'none' });
    expect(fromFile).not.toHaveProperty('client_secret');
    expect(parseSuccess(await runCli(['client:delete', fromFile.client_id]))).toMatchObject({ client_id: fromFile.client_id, revoked_grants: 0 });
    expectFailure(await runCli(['client:show', fromFile.client_id]), /no client with id/);
  });
});

describe('client:create --post-logout-redirect', () => {
  it('stores exact https URLs, and http ones on loopback, repeatable; client:show lists them', async () => {
    const urls = ['https://app.example.com/signed-out', 'https://app.example.com/bye?lang=en', 'http://127.0.0.1:3000/', 'http://[::1]/out', 'http://localhost:8080/out'];
    const created = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Web portal', ...urls.flatMap((url) => ['--post-logout-redirect', url])]));
    expect(created.post_logout_redirect_uris).toEqual(urls);
    expect(parseSuccess<ClientView>(await runCli(['client:show', created.client_id])).post_logout_redirect_uris).toEqual(urls);
    expect(parseSuccess<ClientView>(await runCli(['client:create', '--name', 'No logout page'])).post_logout_redirect_uris).toEqual([]);
  });

  it('refuses what is no exact https URL (http off loopback, patterns, fragments, user information, relative), saying which, and registers nothing', async () => {
    const before = await clientRows();
    const refusals: [string, RegExp][] = [
      ['http://app.example.com/out', /post-logout redirect "http:\/\/app\.example\.com\/out" must use https \(http only on a loopback address\)/],
      ['http://192.168.0.10/out', /must use https/],
      ['https://10.0.0.0/8:*/out', /must be an exact URL/],
      ['https://app.example.com/*', /must be an exact URL/],
      ['https://app.example.com/out#top', /must not contain a fragment/],
      ['https://user:pw@app.example.com/out', /must not contain user information/],
      ['/signed-out', /must be an absolute http\(s\) URL/],
      ['javascript:alert(1)', /must be an absolute http\(s\) URL/],
      ['https://app.example.com/a/../out', /dot segments/],
    ];
    for (const [url, reason] of refusals) {
      expectFailure(await runCli(['client:create', '--name', 'Refused', '--post-logout-redirect', url]), reason);
    }
    expectFailure(
      await runCli(['client:create', '--name', 'Refused', '--post-logout-redirect', 'https://a.example/x', '--post-logout-redirect', 'https://a.example/x']),
      /each --post-logout-redirect may be given once/,
    );
    expect(await clientRows()).toEqual(before);
  });

  it('client:update replaces the list with the one given, --clear-post-logout-redirects empties it; a refused one changes nothing', async () => {
    const created = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Portal', '--post-logout-redirect', 'https://portal.example/one']));
    const replaced = parseSuccess<ClientView>(
      await runCli(['client:update', created.client_id, '--post-logout-redirect', 'https://portal.example/two', '--post-logout-redirect', 'https://portal.example/three']),
    );
    expect(replaced.post_logout_redirect_uris).toEqual(['https://portal.example/two', 'https://portal.example/three']);
    const before = await clientRows();
    expectFailure(await runCli(['client:update', created.client_id, '--post-logout-redirect', 'http://portal.example/']), /must use https/);
    expectFailure(
      await runCli(['client:update', created.client_id, '--post-logout-redirect', 'https://portal.example/', '--clear-post-logout-redirects']),
      /contradict each other/,
    );
    expect(await clientRows()).toEqual(before);
    expect(parseSuccess<ClientView>(await runCli(['client:update', created.client_id, '--clear-post-logout-redirects'])).post_logout_redirect_uris).toEqual([]);
  });
});

describe('client:create --id-token-alg', () => {
  it('defaults to RS256, takes ES256, and client:update changes it', async () => {
    const plain = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Default alg']));
    expect(plain.id_token_signed_response_alg).toBe('RS256');
    const es = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'EC app', '--id-token-alg', 'ES256']));
    expect(es.id_token_signed_response_alg).toBe('ES256');
    expect(parseSuccess<ClientView>(await runCli(['client:show', es.client_id])).id_token_signed_response_alg).toBe('ES256');
    expect(parseSuccess<ClientView>(await runCli(['client:update', es.client_id, '--id-token-alg', 'RS256'])).id_token_signed_response_alg).toBe('RS256');
  });

  it('refuses any other algorithm, at create and at update, and changes nothing', async () => {
    const created = parseSuccess<ClientView>(await runCli(['client:create', '--name', 'Alg refusals']));
    const before = await clientRows();
    for (const alg of ['HS256', 'none', 'rs256', 'PS256', '']) {
      expectFailure(await runCli(['client:create', '--name', 'Bad alg', '--id-token-alg', alg]), /the ID token algorithm \(--id-token-alg\) must be one of: RS256, ES256/);
      expectFailure(await runCli(['client:update', created.client_id, '--id-token-alg', alg]), /must be one of: RS256, ES256/);
    }
    expect(await clientRows()).toEqual(before);
  });
});
