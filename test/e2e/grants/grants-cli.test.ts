import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { DEVICE_GRANT, startDeviceAuthorization, verifyDevice } from '../../factories/device-flow.factory.js';
import { SUBSCRIBE_SCOPE } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { openStream, type Stream } from '../../factories/stream.factory.js';
import {
  authorizationCode,
  credentials,
  type FormResponse,
  LOOPBACK_PATTERN,
  LOOPBACK_REDIRECT,
  type PortalUser,
  postForm,
  type TokenResponse,
  userId,
} from '../../factories/token-flow.factory.js';
import { expectFailure, parseSuccess, securityEvents } from '../../setup/cli-results.js';
import { CLI_TEST_TIMEOUT_MS, runCli as runBuiltCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

/**
 * grants:list and grants:revoke --grant, run as operators run them, beside a running service that
 * believes X-Forwarded-For (TRUST_PROXY=true), so each device signs in and refreshes from an
 * address of its own.
 */
let app: TestApp;
let helperClient: TestClient;
let deviceClient: TestClient;
let cwd: string;
const runCli = (args: string[]) => runBuiltCli(args, { cwd, env: { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn' } });

type ListedGrant = {
  grant_id: string;
  client_id: string;
  client_name: string;
  scope: string | null;
  flow: string;
  created_at: string;
  created_address: string | null;
  last_refreshed_at: string | null;
  last_refreshed_address: string | null;
  expires_at: string | null;
};

const listGrants = async (user: PortalUser) => parseSuccess<ListedGrant[]>(await runCli(['grants:list', '--username', user.username]));

/** A device signs in through the helper flow, its token request coming from `address`: its tokens. */
async function signInFrom(address: string, user: PortalUser, client = helperClient): Promise<TokenResponse> {
  const code = await authorizationCode(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });
  const response = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code, scope: SUBSCRIBE_SCOPE, ...credentials(client) }, { 'x-forwarded-for': address });
  if (response.status !== 200) throw new Error(`code exchange answered ${response.status}: ${response.text}`);
  return response.body as unknown as TokenResponse;
}

/** A refresh from `address` (with `scope`: narrowed, which the locked path decides). */
const refreshFrom = (address: string, refreshToken: string, extra: Record<string, string> = {}, client = helperClient): Promise<FormResponse> =>
  postForm(app, '/sso/token', { grant_type: 'refresh_token', refresh_token: refreshToken, ...credentials(client), ...extra }, { 'x-forwarded-for': address });

/** The grant a token response belongs to: its access token's `sid`. */
const grantOf = (tokens: { access_token: string }) => decodeJwt(tokens.access_token).sid as string;

/** Resolves with the close code, or 'open' if the stream is still open after `ms`. */
const closedWithin = (stream: Stream, ms: number) =>
  Promise.race([stream.closed.then(({ code }) => code), new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), ms))]);

beforeAll(async () => {
  app = await startTestApp({ TRUST_PROXY: 'true' });
  helperClient = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN], scopes: [SUBSCRIBE_SCOPE] });
  deviceClient = await createClient(app, { grants: [DEVICE_GRANT as never, 'refresh_token'] });
  cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-cli-'));
});
afterAll(async () => {
  await app?.close();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('grants:list', () => {
  it('tells two devices of one user on one client apart: each its own grant id, the address it signed in from and the address of its last refresh', async () => {
    const user = await createUser(app);
    const tablet = await signInFrom('203.0.113.7', user);
    const phone = await signInFrom('2001:db8::15', user);
    // The usual refresh (one statement), and a narrowed one (the locked path), each from elsewhere;
    // a dual-stack listener's IPv4-mapped address reads as IPv4.
    const tabletRenewed = await refreshFrom('198.51.100.23', tablet.refresh_token);
    expect(tabletRenewed.status).toBe(200);
    expect((await refreshFrom('::ffff:192.0.2.44', phone.refresh_token, { scope: SUBSCRIBE_SCOPE })).status).toBe(200);

    const grants = await listGrants(user);
    expect(grants).toEqual([
      {
        grant_id: grantOf(tablet),
        client_id: helperClient.id,
        client_name: expect.stringMatching(/^client-/),
        scope: SUBSCRIBE_SCOPE,
        flow: 'helper',
        created_at: expect.any(String),
        created_address: '203.0.113.7',
        last_refreshed_at: expect.any(String),
        last_refreshed_address: '198.51.100.23',
        expires_at: expect.any(String),
      },
      expect.objectContaining({ grant_id: grantOf(phone), client_id: helperClient.id, created_address: '2001:db8::15', last_refreshed_address: '192.0.2.44' }),
    ]);
    expect(grants[0].grant_id).not.toBe(grants[1].grant_id);

    // The next refresh is the last one now.
    expect((await refreshFrom('198.51.100.99', tabletRenewed.body.refresh_token as string)).status).toBe(200);
    expect((await listGrants(user))[0]).toMatchObject({ grant_id: grantOf(tablet), created_address: '203.0.113.7', last_refreshed_address: '198.51.100.99' });
  });

  it('keeps the address of the device that polled for a device-flow grant, and none for a forwarded address that is not one', async () => {
    const user = await createUser(app);
    const { device_code, user_code } = await startDeviceAuthorization(app, deviceClient);
    await verifyDevice(app, user_code, user);
    const poll = await postForm(app, '/sso/token', { grant_type: DEVICE_GRANT, device_code, ...credentials(deviceClient) }, { 'x-forwarded-for': '192.0.2.99' });
    expect(poll.status, poll.text).toBe(200);
    // Whatever a request says of itself, the grant is issued; the address is then unknown.
    const odd = await signInFrom('not-an-address', user);
    expect((await refreshFrom('also not one', odd.refresh_token)).status).toBe(200);

    expect(await listGrants(user)).toEqual([
      expect.objectContaining({ client_id: deviceClient.id, flow: 'device', created_address: '192.0.2.99', last_refreshed_at: null, last_refreshed_address: null }),
      expect.objectContaining({ grant_id: grantOf(odd), created_address: null, last_refreshed_at: expect.any(String), last_refreshed_address: null }),
    ]);
  });

  it('prints a table within 100 columns that keeps every grant id and client id whole, and names the columns left out', async () => {
    // What an operator sees of a user signed in twice on a client with a long name, from an IPv4
    // and an IPv6 address: the ids whole, the rest cut short or left out.
    //
    // grant_id                              client_id               created_at          created_address
    // ------------------------------------  ----------------------  ------------------  ------------------
    // 7c0e5f0a-3d1b-4c8e-9a2f-5b6d7e8f9a01  Vx3kQ9LmT2pR8sW4yZ1aBc  2026-05-02 09:14:…  203.0.113.7
    // 1b9d2c44-8e7f-4a6b-b5c4-d3e2f1a0b9c8  Vx3kQ9LmT2pR8sW4yZ1aBc  2026-05-02 09:14:…  2001:db8:85a3::8a…
    // (5 more columns: last_refreshed_at, last_refreshed_address, client_name, scope, expires_at; --format
    // json shows everything)
    const bridge = await app.get(ClientsService).create({
      name: 'Bridge display, port side (MV Nordic Star, deck 3)',
      redirectPatterns: [LOOPBACK_PATTERN],
      scopes: [SUBSCRIBE_SCOPE],
    });
    const client = { id: bridge.client_id, secret: bridge.client_secret };
    const user = await createUser(app, `captain.${randomUUID().slice(0, 8)}@nordic-star.example`);
    const first = await signInFrom('203.0.113.7', user, client);
    const second = await signInFrom('2001:db8:85a3::8a2e:370:7334', user, client);

    const run = await runCli(['grants:list', '--username', user.username, '--format', 'table']);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(100);
    expect(lines[0].split(/\s{2,}/)).toEqual(['grant_id', 'client_id', 'created_at', 'created_address']);
    const signedIn = String.raw`\d{4}-\d\d-\d\d \d\d:\d\d:…`;
    expect(lines[2]).toMatch(new RegExp(String.raw`^${grantOf(first)}  ${client.id}  ${signedIn}  203\.0\.113\.7$`));
    expect(lines[3]).toMatch(new RegExp(String.raw`^${grantOf(second)}  ${client.id}  ${signedIn}  2001:db8:85a3::8a…$`));
    expect(lines.slice(4).join(' ')).toBe('(5 more columns: last_refreshed_at, last_refreshed_address, client_name, scope, expires_at; --format json shows everything)');
  });
});

describe('grants:revoke --grant', () => {
  it('signs out exactly that device: its refresh is invalid_grant and its stream closes, while the other device refreshes on', async () => {
    const user = await createUser(app);
    const tablet = await signInFrom('203.0.113.7', user);
    const phone = await signInFrom('2001:db8::15', user);
    const tabletStream = await openStream(app.baseUrl, tablet.access_token);
    const phoneStream = await openStream(app.baseUrl, phone.access_token);

    // The grant id alone: no username needed.
    const run = await runCli(['grants:revoke', '--grant', grantOf(tablet)]);
    expect(parseSuccess(run)).toEqual({ user_id: await userId(app, user), username: user.username, client_id: helperClient.id, grant_id: grantOf(tablet), revoked_grants: 1 });
    expect(securityEvents(run)).toEqual([
      expect.objectContaining({ event: 'user.signed_out', reason: 'cli', userId: await userId(app, user), clientId: helperClient.id, grantId: grantOf(tablet), revokedGrants: 1 }),
    ]);

    expect(await closedWithin(tabletStream, 2_000)).toBe(1008);
    const refused = await refreshFrom('203.0.113.7', tablet.refresh_token);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_grant' });
    expect(await closedWithin(phoneStream, 200)).toBe('open');
    expect((await refreshFrom('2001:db8::15', phone.refresh_token)).status).toBe(200);
    expect((await listGrants(user)).map((grant) => grant.grant_id)).toEqual([grantOf(phone)]);
    await phoneStream.close();

    // Again, now with the username: found, and nothing more to revoke.
    expect(parseSuccess(await runCli(['grants:revoke', '--username', user.username, '--grant', grantOf(tablet)]))).toMatchObject({ grant_id: grantOf(tablet), revoked_grants: 0 });
  });

  it('fails for a malformed or unknown grant id, or with --client too, revoking nothing', async () => {
    const user = await createUser(app);
    const tokens = await signInFrom('203.0.113.7', user);
    const unknown = randomUUID();

    expectFailure(await runCli(['grants:revoke', '--grant', 'not-a-grant-id']), /^error: no grant with id "not-a-grant-id": a grant id is a UUID/);
    expectFailure(await runCli(['grants:revoke', '--grant', `${grantOf(tokens)}x`]), /no grant with id/);
    expectFailure(await runCli(['grants:revoke', '--grant', unknown]), new RegExp(`^error: no grant with id "${unknown}"\\n$`));
    expectFailure(await runCli(['grants:revoke', '--username', user.username, '--grant', unknown]), /no grant with id/);
    expectFailure(await runCli(['grants:revoke', '--grant', grantOf(tokens), '--client', helperClient.id]), /^error: give --grant or --client, not both/);

    expect((await listGrants(user)).map((grant) => grant.grant_id)).toEqual([grantOf(tokens)]);
    expect((await refreshFrom('203.0.113.7', tokens.refresh_token)).status).toBe(200);
  });

  it("with a username, refuses another user's grant as not found, revoking nothing", async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    const bobs = await signInFrom('198.51.100.23', bob);

    expectFailure(await runCli(['grants:revoke', '--username', alice.username, '--grant', grantOf(bobs)]), new RegExp(`^error: user "${alice.username}" has no grant with id "${grantOf(bobs)}"\\n$`));
    expectFailure(await runCli(['grants:revoke', '--username', 'nobody-here', '--grant', grantOf(bobs)]), /no user named "nobody-here"/);

    expect((await listGrants(bob)).map((grant) => grant.grant_id)).toEqual([grantOf(bobs)]);
    expect((await refreshFrom('198.51.100.23', bobs.refresh_token)).status).toBe(200);
  });
});
