import { decodeJwt } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UsersService } from '../../../src/users/users.service.js';
import type { TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { exchangeCode, LOOPBACK_PATTERN, type TokenResponse } from '../../factories/token-flow.factory.js';
import { ALICE, confirmSignIn, createSignInClient, heading, issuedRows, linkedUser, newKek, nextCallback, registerProvider, startDeviceCallback } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamAccount, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// Broker mode with a real provider (oidc-provider in its own process, its own sign-in page):
// devices sign in through it and get the service's own tokens, for a portal user linked by the
// provider's issuer and sub only.

const CAROL: UpstreamAccount = { sub: 'carol-sub', preferred_username: 'carol', email: 'shared@example.test', email_verified: true, password: 'carol-pw' };
const DAVE: UpstreamAccount = { sub: 'dave-sub', preferred_username: 'dave', email: 'shared@example.test', email_verified: true, password: 'dave-pw' };
const FRANK: UpstreamAccount = { sub: 'frank-sub', preferred_username: 'frank', password: 'frank-pw' };
/** At the second provider: the same `sub` as Alice at the first. */
const ALICE_ELSEWHERE: UpstreamAccount = { sub: 'alice-sub', preferred_username: 'alice.other', password: 'other-pw' };

const credentials = (account: UpstreamAccount) => ({ username: account.preferred_username ?? account.sub, password: account.password });

describe('broker mode through a real identity provider', () => {
  let app: TestApp;
  let corp: UpstreamProvider;
  let other: UpstreamProvider;
  let browser: Browser;
  let contexts: BrowserContext[] = [];
  /** Signs in through corp only: its pages send the browser straight there. */
  let corpOnly: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek(), CODE_POLL_MIN_INTERVAL: '0' });
    [corp, other, browser] = await Promise.all([
      startUpstreamProvider({ accounts: [ALICE, CAROL, DAVE, FRANK] }),
      startUpstreamProvider({ accounts: [ALICE_ELSEWHERE] }),
      launchChromium(),
    ]);
    await registerProvider(app, corp, 'corp', 'Corp SSO');
    await registerProvider(app, other, 'other', 'Other SSO');
    corpOnly = await createSignInClient(app, ['corp']);
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([corp?.stop(), other?.stop()]);
    await app?.close();
  });
  afterEach(async () => {
    await Promise.all(contexts.map((context) => context.close()));
    contexts = [];
  });

  /** A page in a browser of its own: oidc-provider keeps a session per browser, so each sign-in sees its page. */
  async function freshPage(): Promise<Page> {
    const context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    contexts.push(context);
    return context.newPage();
  }

  /** A polling device's whole sign-in through a provider (`button`: the one to press on the sign-in page first); its tokens. */
  async function tokensThroughProvider(client: TestClient, account: UpstreamAccount, button?: string): Promise<TokenResponse> {
    const config = await issueState(app, client.id);
    const page = await freshPage();
    await page.goto(config.authorize_url);
    if (button) await page.getByRole('button', { name: button }).click();
    await signInAtUpstream(page, credentials(account));
    await confirmSignIn(page);
    expect(await heading(page)).toBe("You're signed in");
    const polled = await fetch(config.code_url);
    expect(polled.status).toBe(200);
    const exchanged = await exchangeCode(app, client, ((await polled.json()) as { code: string }).code);
    expect(exchanged.status).toBe(200);
    return exchanged.body as unknown as TokenResponse;
  }

  const subOf = (tokens: TokenResponse) => decodeJwt(tokens.access_token).sub;

  it('a polling device signs in through the provider and gets tokens for the linked user', async () => {
    const config = await issueState(app, corpOnly.id);
    const page = await freshPage();
    await page.goto(config.authorize_url);
    await signInAtUpstream(page, credentials(ALICE));
    await confirmSignIn(page);
    expect(await heading(page)).toBe("You're signed in");
    expect(await page.locator('main').textContent()).toContain('signed in as alice');
    const polled = await fetch(config.code_url);
    const tokens = await exchangeCode(app, corpOnly, ((await polled.json()) as { code: string }).code);
    expect(tokens.status).toBe(200);
    const [user] = await query<{ username: string; provider: string; profile: object; password_hash: string | null }>(
      app.databaseUrl,
      "SELECT username, provider, profile, password_hash FROM portal_users WHERE username = 'corp:alice-sub'",
    );
    expect(user).toEqual({ username: 'corp:alice-sub', provider: 'corp', profile: { preferred_username: 'alice', name: 'Alice Liddell', email: 'alice@example.test', email_verified: true }, password_hash: null });
  });

  it("a device waiting at its redirect_url is sent the code and state after the provider's sign-in, and the code gives tokens whose sub is the linked user", async () => {
    const device = await startDeviceCallback();
    try {
      const client = await createSignInClient(app, ['corp'], { redirectPatterns: [LOOPBACK_PATTERN] });
      const config = await issueState(app, client.id, { redirect_url: device.url });
      const page = await freshPage();
      await page.goto(config.authorize_url);
      expect(new URL(page.url()).origin).toBe(corp.issuer);
      await signInAtUpstream(page, credentials(ALICE));
      expect(device.received).toHaveLength(0);
      await confirmSignIn(page);

      expect(page.url().startsWith(`${device.url}?`)).toBe(true);
      expect(await page.textContent('body')).toBe('device got the answer');
      expect(device.received).toHaveLength(1);
      const [back] = device.received;
      expect([...back.searchParams.keys()].sort()).toEqual(['code', 'iss', 'state']);
      expect(back.searchParams.get('state')).toBe(config.state);
      const exchanged = await exchangeCode(app, client, back.searchParams.get('code')!);
      expect(exchanged.status).toBe(200);
      expect(decodeJwt(exchanged.body.access_token as string)).toMatchObject({ sub: (await linkedUser(app, 'corp', ALICE.sub)).id, client_id: client.id });
    } finally {
      await device.close();
    }
  });

  it("links by the provider's issuer and sub: the same subject twice is one portal user, the same sub at another provider is another", async () => {
    const first = subOf(await tokensThroughProvider(corpOnly, ALICE));
    const second = subOf(await tokensThroughProvider(corpOnly, ALICE));
    expect(second).toBe(first);
    expect(first).toBe((await linkedUser(app, 'corp', ALICE.sub)).id);

    // Both providers on one client: the page offers a button each; the second provider's alice-sub is someone else.
    const both = await createSignInClient(app, ['corp', 'other']);
    const elsewhere = subOf(await tokensThroughProvider(both, ALICE_ELSEWHERE, 'Other SSO'));
    expect(elsewhere).not.toBe(first);
    expect(await linkedUser(app, 'other', ALICE.sub)).toMatchObject({ id: elsewhere, username: 'other:alice-sub', profile: { preferred_username: 'alice.other' } });
    expect(subOf(await tokensThroughProvider(both, ALICE, 'Corp SSO'))).toBe(first);
  });

  it("never links by e-mail or username: a provider's user whose e-mail or handle a local user has, or who shares an e-mail with another, gets a portal user of their own", async () => {
    // A local user named with the e-mail both upstream users give, and one named like Carol's brokered handle.
    const users = app.get(UsersService);
    const byEmail = await users.create({ username: 'shared@example.test', password: 'local password 1' });
    const byHandle = await users.create({ username: 'corp:carol-sub', password: 'local password 2' });

    const carol = subOf(await tokensThroughProvider(corpOnly, CAROL));
    const dave = subOf(await tokensThroughProvider(corpOnly, DAVE));
    expect(new Set([carol, dave, byEmail.id, byHandle.id]).size).toBe(4);
    expect((await linkedUser(app, 'corp', CAROL.sub)).id).toBe(carol);
    expect((await linkedUser(app, 'corp', DAVE.sub)).id).toBe(dave);
    // The local users are still local: their passwords, no link.
    const locals = await query<{ id: string; linked: boolean; has_password: boolean }>(
      app.databaseUrl,
      'SELECT id, upstream_issuer IS NOT NULL AS linked, password_hash IS NOT NULL AS has_password FROM portal_users WHERE id = ANY ($1) ORDER BY username',
      [[byEmail.id, byHandle.id]],
    );
    expect(locals).toEqual([
      { id: byHandle.id, linked: false, has_password: true },
      { id: byEmail.id, linked: false, has_password: true },
    ]);
  });

  it('user:disable wins over the provider: the next sign-in through it shows the disabled page (403), saying to ask the administrator, and issues nothing', async () => {
    await tokensThroughProvider(corpOnly, FRANK);
    await app.get(UsersService).disable('corp:frank-sub');
    const before = await issuedRows(app);

    const config = await issueState(app, corpOnly.id);
    const page = await freshPage();
    await page.goto(config.authorize_url);
    const callback = nextCallback(page);
    await signInAtUpstream(page, credentials(FRANK));
    expect((await callback).status()).toBe(403);
    expect(await heading(page)).toBe('Your account is disabled');
    // Starting again from the device cannot help a disabled account: the page says who can.
    expect(await page.locator('main p').textContent()).toBe(
      'Your account has been disabled here by an administrator, so it cannot sign in. To use it again, ask the administrator of this service to enable it.',
    );
    expect((await fetch(config.code_url)).status).toBe(404);
    expect(await issuedRows(app)).toEqual(before);
  });
});
