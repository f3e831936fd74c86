import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { UsersService } from '../../../src/users/users.service.js';
import { DEVICE_GRANT, startDeviceAuthorization, VerificationPage, verifyDevice } from '../../factories/device-flow.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { authorizationCode, credentials, exchangeCode, issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT, postForm, refresh, revoke, userId } from '../../factories/token-flow.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * The security event log answers "why can't this user sign in?": each refusal or revocation a
 * person causes leaves one line naming the event, the reason, the client, the user and the
 * address the request came from (behind a trusted proxy here, so the forwarded one), and never
 * the password, code, token or secret involved.
 */
describe('the security event log', () => {
  let app: TestApp;
  let client: TestClient;
  let address = 0;
  /** A fresh address per test, so one test's failed sign-ins do not slow another's down. */
  const from = () => {
    const forwarded = `203.0.113.${++address}`;
    return { headers: { 'x-forwarded-for': forwarded }, address: forwarded };
  };

  beforeAll(async () => {
    app = await startTestApp({ TRUST_PROXY: 'true', CODE_POLL_MIN_INTERVAL: '0', REFRESH_REUSE_GRACE: '0' });
    client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
  });
  afterAll(() => app?.close());

  /** The lines of one event, once the log has them (lines are written when the event loop turns). */
  const eventLines = async (event: string, matching: Record<string, unknown> = {}) => {
    await new Promise((resolve) => setImmediate(resolve));
    return app.logs.filter((line) => line.event === event && Object.entries(matching).every(([key, value]) => line[key] === value));
  };
  const logText = () => JSON.stringify(app.logs);

  it('records a wrong password on the login page: client, user, forwarded address, never the password or state', async () => {
    const user = await createUser(app);
    const { headers, address } = from();
    const { authorize_url } = await issueState(app, client.id);
    const login = await signIn(authorize_url, { username: user.username, password: 'Wr0ng-password-typed' }, headers);
    expect(await login.text()).toContain('Wrong username or password.');

    const [line, ...more] = await eventLines('login.failed', { username: user.username });
    expect(more).toEqual([]);
    expect(line).toMatchObject({
      level: 'info',
      event: 'login.failed',
      reason: 'wrong_password',
      clientId: client.id,
      username: user.username,
      userId: await userId(app, user),
      address,
      reqId: login.headers.get('x-request-id'),
    });
    expect(logText()).not.toContain('Wr0ng-password-typed');
    expect(logText()).not.toContain(new URL(authorize_url).searchParams.get('state'));
  });

  it('tells an unknown username from a wrong password', async () => {
    const { headers, address } = from();
    const { authorize_url } = await issueState(app, client.id);
    await (await signIn(authorize_url, { username: 'nobody-by-this-name', password: 'whatever-it-is' }, headers)).text();
    expect(await eventLines('login.failed', { username: 'nobody-by-this-name' })).toEqual([
      expect.objectContaining({ reason: 'unknown_user', clientId: client.id, address }),
    ]);
  });

  it('records a disabled user who signs in with the right password, and the disabling itself', async () => {
    const user = await createUser(app);
    await app.get(UsersService).disable(user.username);
    expect(await eventLines('user.disabled', { username: user.username })).toEqual([
      expect.objectContaining({ level: 'info', reason: 'cli', userId: await userId(app, user), revokedGrants: 0 }),
    ]);
    const { headers, address } = from();
    const { authorize_url } = await issueState(app, client.id);
    const login = await signIn(authorize_url, user, headers);
    expect(await login.text()).toContain('Wrong username or password.'); // the page does not tell a guesser the password was right
    expect(await eventLines('login.failed', { username: user.username })).toEqual([expect.objectContaining({ reason: 'disabled_user', clientId: client.id, address })]);
    expect(logText()).not.toContain(user.password);
  });

  it('records the slow-down that refuses further attempts, at warn', async () => {
    const user = await createUser(app);
    const { headers, address } = from();
    let answer = 0;
    for (let attempt = 0; attempt < 8 && answer !== 429; attempt++) {
      const { authorize_url } = await issueState(app, client.id);
      const login = await signIn(authorize_url, { username: user.username, password: `wrong-${attempt}-password` }, headers);
      answer = login.status;
      await login.text();
    }
    expect(answer).toBe(429);
    expect(await eventLines('login.throttled', { username: user.username })).toEqual([
      expect.objectContaining({ level: 'warn', reason: 'slow_down', clientId: client.id, address, waitSeconds: expect.any(Number) }),
    ]);
  });

  it('records a wrong password on the device verification page, and a device the user denied', async () => {
    const tv = await createClient(app, { grants: [DEVICE_GRANT] });
    const user = await createUser(app);
    const { headers, address } = from();
    const started = await startDeviceAuthorization(app, tv);
    const page = await VerificationPage.open(app, '', headers);
    await page.submit({ user_code: started.user_code });
    await page.submit({ username: user.username, password: 'Not-the-password' });
    expect(page.error).toBe('Wrong username or password.');
    expect(await eventLines('login.failed', { username: user.username })).toEqual([
      expect.objectContaining({ reason: 'wrong_password', clientId: tv.id, address }),
    ]);

    const denied = await verifyDevice(app, started.user_code, user, 'deny', headers);
    expect(denied.html).toContain('Request denied');
    expect(await eventLines('device.denied', { clientId: tv.id })).toEqual([
      expect.objectContaining({ level: 'info', reason: 'user_denied', userId: await userId(app, user), address, reqId: expect.any(String) }),
    ]);
    expect(logText()).not.toContain('Not-the-password');
    expect(logText()).not.toContain(started.device_code);
  });

  it('records a replayed authorization code that revoked its grant, at warn, without the code', async () => {
    const user = await createUser(app);
    const code = await authorizationCode(app, client, user, { redirectUrl: LOOPBACK_REDIRECT });
    expect((await exchangeCode(app, client, code)).status).toBe(200);
    const { headers, address } = from();
    const replay = await postForm(app, '/sso/token', { grant_type: 'authorization_code', code, ...credentials(client) }, headers);
    expect(replay.body).toMatchObject({ error: 'invalid_grant' });

    expect(await eventLines('token.replayed', { userId: await userId(app, user) })).toEqual([
      expect.objectContaining({ level: 'warn', reason: 'code_replayed', clientId: client.id, grantId: expect.any(String), grantRevoked: true, address }),
    ]);
    expect(logText()).not.toContain(code);
  });

  it('records a reused refresh token that revoked its grant, and a grant its client revoked at /sso/revoke', async () => {
    const user = await createUser(app);
    const first = await issueTokens(app, client, user);
    expect((await refresh(app, client, first.refresh_token)).status).toBe(200);
    const { headers, address } = from();
    await postForm(app, '/sso/token', { grant_type: 'refresh_token', refresh_token: first.refresh_token, ...credentials(client) }, headers);
    expect(await eventLines('token.replayed', { userId: await userId(app, user) })).toEqual([
      expect.objectContaining({ reason: 'refresh_token_reused', clientId: client.id, grantRevoked: true, address }),
    ]);

    const other = await createUser(app);
    const tokens = await issueTokens(app, client, other);
    expect((await revoke(app, client, tokens.refresh_token)).status).toBe(200);
    expect(await eventLines('grant.revoked', { userId: await userId(app, other) })).toEqual([
      expect.objectContaining({ level: 'info', reason: 'revoked_by_client', clientId: client.id, grantId: expect.any(String), address: '127.0.0.1' }),
    ]);
    expect(logText()).not.toContain(first.refresh_token);
    expect(logText()).not.toContain(tokens.refresh_token);
    expect(logText()).not.toContain(tokens.access_token);
  });

  it('records a disabled client and a wrong client secret at the token endpoint, never the secret', async () => {
    const disabled = await createClient(app);
    await app.get(ClientsService).setEnabled(disabled.id, false);
    const { headers, address } = from();
    await postForm(app, '/sso/token', { grant_type: 'refresh_token', refresh_token: 'x', ...credentials(disabled) }, headers);
    await postForm(app, '/sso/token', { grant_type: 'refresh_token', refresh_token: 'x', client_id: client.id, client_secret: 'Guessed-secret-value' }, headers);
    expect(await eventLines('client.refused', { address })).toEqual([
      expect.objectContaining({ reason: 'disabled_client', clientId: disabled.id }),
      expect.objectContaining({ reason: 'wrong_secret', clientId: client.id }),
    ]);
    expect(logText()).not.toContain(disabled.secret);
    expect(logText()).not.toContain('Guessed-secret-value');
  });
});
