import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccessDenied, ClientCredentials, FileStore, InvalidClient, MemoryStore, SignInRequired, type Store, UserTokens } from '@voyage-connect/device';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyDevice } from '../../factories/device-flow.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * The TypeScript SDK's token manager against the real service: the parts of a device's program
 * the command line does not show (the Python SDK's own tests cover the same in python/tests/).
 */

/** A store that counts what is written to it, and can be told to fail. */
class WatchedStore implements Store {
  readonly writes: string[] = [];
  failing = false;
  constructor(private readonly inner: Store = new MemoryStore()) {}
  get<T>(key: string) {
    return this.inner.get<T>(key);
  }
  async set(key: string, value: unknown) {
    if (this.failing) throw new Error('the disk is full');
    this.writes.push(key);
    await this.inner.set(key, value);
  }
}

/** What the service says of `token` to its client. */
async function introspect(app: TestApp, client: TestClient, token: string): Promise<{ active: boolean }> {
  const answer = await fetch(`${app.baseUrl}/sso/introspect`, { method: 'POST', body: new URLSearchParams({ token, client_id: client.id, client_secret: client.secret }) });
  return (await answer.json()) as { active: boolean };
}

describe('the TypeScript SDK: tokens', () => {
  let app: TestApp;
  let folder: string;
  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    folder = await mkdtemp(join(tmpdir(), 'voyage-connect-sdk-tokens-'));
  });
  afterAll(async () => {
    await app?.close();
    await rm(folder, { recursive: true, force: true });
  });

  /** A device whose user signed in through the helper (by polling), its tokens in `store`. */
  const signedIn = async (store: Store) => {
    const client = await createClient(app);
    const user = await createUser(app);
    const tokens = new UserTokens({ api: app.baseUrl, clientId: client.id, clientSecret: client.secret, store });
    let login: Promise<Response> | undefined;
    await tokens.signInWithHelper({ onAddress: (url) => (login = signIn(url, user)) });
    expect((await login!).status).toBe(200);
    return { client, tokens };
  };
  /** Makes the stored access token due for a refresh, as time would; a device reading the store from then on sees it. */
  const expire = async (store: Store, client: TestClient) => {
    const held = await store.get<Record<string, unknown>>('user');
    await store.set('user', { ...held, expires_at: Date.now() });
    return new UserTokens({ api: app.baseUrl, clientId: client.id, clientSecret: client.secret, store });
  };

  it('refreshes once for concurrent callers: both get the new token, and the grant lives on', async () => {
    const store = new WatchedStore();
    const { client } = await signedIn(store);
    const first = await store.get<{ access_token: string; refresh_token: string }>('user');
    const device = await expire(store, client);
    store.writes.length = 0;
    const [a, b, c] = await Promise.all([device.accessToken(), device.accessToken(), device.accessToken()]);
    expect(new Set([a, b, c]).size).toBe(1);
    expect(a).not.toBe(first!.access_token);
    expect(store.writes).toEqual(['user']);
    // A second refresh with the same refresh token would have been reuse, ending the grant.
    const now = await store.get<{ refresh_token: string }>('user');
    expect(await introspect(app, client, now!.refresh_token)).toMatchObject({ active: true });
    expect(await introspect(app, client, first!.refresh_token)).toMatchObject({ active: false });
  });

  it('hands out no token it could not save first, and a restart after the save resumes', async () => {
    const path = join(folder, 'device.json');
    const store = new WatchedStore(new FileStore(path));
    const { client } = await signedIn(store);
    const tokens = await expire(store, client);
    store.failing = true;
    await expect(tokens.accessToken()).rejects.toThrow('the disk is full');
    store.failing = false;

    // The process restarts on the file: the pair saved last refreshes (the failed save's pair is lost with it, and the grant says so).
    const restarted = new UserTokens({ api: app.baseUrl, clientId: client.id, clientSecret: client.secret, store: new FileStore(path) });
    await expect(restarted.accessToken()).rejects.toBeInstanceOf(SignInRequired);

    const saved = new WatchedStore(new FileStore(join(folder, 'saved.json')));
    const second = await signedIn(saved);
    const refreshed = await (await expire(saved, second.client)).accessToken();
    const again = new UserTokens({ api: app.baseUrl, clientId: second.client.id, clientSecret: second.client.secret, store: new FileStore(join(folder, 'saved.json')) });
    expect(await again.accessToken()).toBe(refreshed);
    expect(JSON.parse(await readFile(join(folder, 'saved.json'), 'utf8')).user.access_token).toBe(refreshed);
  });

  it('says SignInRequired once the grant was revoked, and forgets the tokens', async () => {
    const store = new MemoryStore();
    const { client } = await signedIn(store);
    const held = await store.get<{ refresh_token: string }>('user');
    const revoked = await fetch(`${app.baseUrl}/sso/revoke`, { method: 'POST', body: new URLSearchParams({ token: held!.refresh_token, client_id: client.id, client_secret: client.secret }) });
    expect(revoked.status).toBe(200);
    const tokens = await expire(store, client);
    const error = await tokens.accessToken().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SignInRequired);
    expect((error as SignInRequired).hint).toBe('sign the user in again');
    expect(await tokens.signedIn()).toBe(false);
  });

  it('signs out: the grant ends at the service, and the tokens are forgotten', async () => {
    const store = new MemoryStore();
    const { client, tokens } = await signedIn(store);
    const held = await store.get<{ refresh_token: string }>('user');
    await tokens.signOut();
    expect(await introspect(app, client, held!.refresh_token)).toMatchObject({ active: false });
    expect(await tokens.signedIn()).toBe(false);
    await expect(tokens.accessToken()).rejects.toBeInstanceOf(SignInRequired);
  });

  it('signs in with a device code (RFC 8628), and reports a denial as AccessDenied', async () => {
    const client = await createClient(app, { grants: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'] });
    const user = await createUser(app);
    const tokens = new UserTokens({ api: app.baseUrl, clientId: client.id, clientSecret: client.secret });
    const approved = await tokens.signInWithDeviceCode({ onCode: ({ userCode }) => void verifyDevice(app, userCode, user) });
    expect(await introspect(app, client, approved.access_token)).toMatchObject({ active: true });
    const denied = new UserTokens({ api: app.baseUrl, clientId: client.id, clientSecret: client.secret });
    await expect(denied.signInWithDeviceCode({ onCode: ({ userCode }) => void verifyDevice(app, userCode, user, 'deny') })).rejects.toBeInstanceOf(AccessDenied);
  }, 60_000);

  it('keeps a client-credentials token until it is due, and names a wrong secret as InvalidClient', async () => {
    const client = await createClient(app, { grants: ['client_credentials'] });
    const tokens = new ClientCredentials({ api: app.baseUrl, clientId: client.id, clientSecret: client.secret });
    const token = await tokens.accessToken();
    expect(await tokens.accessToken()).toBe(token);
    expect(await tokens.renew()).not.toBe(token);
    const wrong = new ClientCredentials({ api: app.baseUrl, clientId: client.id, clientSecret: 'wrong' });
    await expect(wrong.accessToken()).rejects.toBeInstanceOf(InvalidClient);
  });
});
