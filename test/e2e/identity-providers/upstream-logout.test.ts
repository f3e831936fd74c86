import { generateKeyPair, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { JwtSignerService } from '../../../src/keys/jwt-signer.service.js';
import { LOGOUT_RETURN_TYP, ProviderLogoutReturnsService } from '../../../src/oidc/provider-logout-returns.service.js';
import { issueState } from '../../factories/state.factory.js';
import { LOOPBACK_PATTERN } from '../../factories/token-flow.factory.js';
import { ALICE, confirmSignIn, createSignInClient, heading, newKek, type RegisteredProvider, registerProvider, startDeviceCallback } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// An app's RP-initiated logout for a user who signed in through the portal's identity provider
// (broker): the service's session ends, the browser passes the provider's own sign-out (which ends
// the provider's session too) and comes back through /sso/logout/done to the address the app
// registered, with its state, as Keycloak and Dex chain their sign-outs. /sso/logout/done goes on
// only for a state the service made, unexpired, to an address still registered; anything else
// shows "You're signed out" and redirects nowhere.

describe('logout of a user signed in through an identity provider', () => {
  let app: TestApp;
  let corp: UpstreamProvider;
  let registered: RegisteredProvider;
  let browser: Browser;
  let context: BrowserContext;
  /** The app's own pages: where its sign-in comes back (redirect_uri) and where its sign-out lands (post_logout_redirect_uri). */
  let appCallback: Awaited<ReturnType<typeof startDeviceCallback>>;
  let appSignedOut: Awaited<ReturnType<typeof startDeviceCallback>>;
  let config: oidc.Configuration;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek() });
    [corp, browser, appCallback, appSignedOut] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), launchChromium(), startDeviceCallback(), startDeviceCallback()]);
    registered = await registerProvider(app, corp, 'corp', 'Corp SSO');
    const client = await createSignInClient(app, ['corp'], { redirectPatterns: [LOOPBACK_PATTERN], postLogoutRedirectUris: [appSignedOut.url] });
    config = await oidc.discovery(new URL(app.baseUrl), client.id, client.secret, undefined, { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([corp?.stop(), appCallback?.close(), appSignedOut?.close()]);
    await app?.close();
  });
  afterEach(async () => context?.close());

  /** The app's sign-in in a fresh browser (the provider's page, as the client signs in through corp only, then Continue); its ID token. */
  async function signedIn(): Promise<{ page: Page; idToken: string }> {
    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: appCallback.url,
      scope: 'openid profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    await page.goto(url.href);
    expect(new URL(page.url()).origin).toBe(corp.issuer);
    const before = appCallback.received.length;
    await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
    await confirmSignIn(page);
    expect(appCallback.received).toHaveLength(before + 1);
    const tokens = await oidc.authorizationCodeGrant(config, appCallback.received.at(-1)!, { pkceCodeVerifier: verifier, idTokenExpected: true });
    return { page, idToken: tokens.id_token! };
  }

  /** Whether the provider still signs this browser in silently (prompt=none): its session lives. */
  async function providerSessionLive(): Promise<boolean> {
    const challenge = await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier());
    const params = new URLSearchParams({ client_id: registered.clientId, response_type: 'code', scope: 'openid', redirect_uri: `${app.baseUrl}/sso/callback/corp`, prompt: 'none', code_challenge: challenge, code_challenge_method: 'S256' });
    const answer = await context.request.get(`${corp.issuer}/auth?${params}`, { maxRedirects: 0 });
    const back = new URL(answer.headers().location, corp.issuer);
    expect(back.searchParams.has('code') || back.searchParams.get('error') === 'login_required', back.href).toBe(true);
    return back.searchParams.has('code');
  }

  /** Whether the service still signs this browser in silently for the app (prompt=none): its session lives. */
  async function serviceSessionLive(): Promise<boolean> {
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: appCallback.url, scope: 'openid', prompt: 'none', code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
    const answer = await context.request.get(url.href, { maxRedirects: 0 });
    return new URL(answer.headers().location).searchParams.has('code');
  }

  /** The provider's sign-out page (its "Sign out?" question): the user says yes; the URL where the browser then stops. */
  async function confirmAtProvider(page: Page, stopsAt: (url: URL) => boolean): Promise<URL> {
    expect(new URL(page.url()).origin).toBe(corp.issuer);
    expect(await heading(page)).toBe('Sign-out');
    await page.getByRole('button', { name: 'Yes, sign me out' }).click({ noWaitAfter: true });
    await page.waitForURL(stopsAt);
    return new URL(page.url());
  }

  it("comes back from the provider's sign-out to the app's registered address with its state, both sessions ended", async () => {
    const { page, idToken } = await signedIn();
    expect(await providerSessionLive()).toBe(true);
    expect(await serviceSessionLive()).toBe(true);
    const passed: string[] = [];
    page.on('response', (response) => passed.push(`${response.status()} ${new URL(response.url()).origin}${new URL(response.url()).pathname}`));

    await page.goto(oidc.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: appSignedOut.url, state: 'bye-corp' }).href);
    const landed = await confirmAtProvider(page, (url) => url.origin === new URL(appSignedOut.url).origin);

    expect(landed.href).toBe(`${appSignedOut.url}?state=bye-corp`);
    expect(appSignedOut.received.map((url) => url.search)).toContain('?state=bye-corp');
    expect(await page.textContent('body')).toBe('device got the answer');
    expect(passed).toContain(`302 ${app.baseUrl}/sso/logout/done`);
    expect(await providerSessionLive()).toBe(false);
    expect(await serviceSessionLive()).toBe(false);
  });

  it('comes back to the signed-out page when the app asked for no address', async () => {
    const { page, idToken } = await signedIn();
    await page.goto(oidc.buildEndSessionUrl(config, { id_token_hint: idToken }).href);
    const landed = await confirmAtProvider(page, (url) => url.origin === app.baseUrl);

    expect(`${landed.pathname}${landed.search}`).toBe('/sso/logout/done');
    expect(await heading(page)).toBe("You're signed out");
    expect(await providerSessionLive()).toBe(false);
    expect(await serviceSessionLive()).toBe(false);
  });

  it('comes back to the app after the user confirms "Sign out?" (no id_token_hint)', async () => {
    const { page } = await signedIn();
    const clientId = config.clientMetadata().client_id;
    await page.goto(`${app.baseUrl}/sso/logout?${new URLSearchParams({ client_id: clientId, post_logout_redirect_uri: appSignedOut.url, state: 'bye-confirmed' })}`);
    expect(await heading(page)).toBe('Sign out?');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((url) => url.origin === corp.issuer);
    const landed = await confirmAtProvider(page, (url) => url.origin === new URL(appSignedOut.url).origin);

    expect(landed.href).toBe(`${appSignedOut.url}?state=bye-confirmed`);
    expect(await providerSessionLive()).toBe(false);
  });

  describe('/sso/logout/done', () => {
    const AFTER = 'https://app.example/signed-out';
    let clientId: string;

    beforeAll(async () => {
      clientId = (await app.get(ClientsService).create({ name: `return-${Date.now()}`, redirectPatterns: [LOOPBACK_PATTERN], postLogoutRedirectUris: [AFTER, `${AFTER}/later`] })).client_id;
    });

    const done = (query: string) => fetch(`${app.baseUrl}/sso/logout/done${query}`, { redirect: 'manual' });
    const stateFor = (redirectUri: string, state?: string) => app.get(ProviderLogoutReturnsService).issue({ clientId, redirectUri, ...(state === undefined ? {} : { state }) });

    /** "You're signed out", and no redirect. */
    async function expectSignedOutPage(answer: Response, what: string) {
      expect(answer.status, what).toBe(200);
      expect(answer.headers.get('location'), what).toBeNull();
      expect(await answer.text(), what).toContain('<h1>You&#39;re signed out</h1>');
    }

    it("sends the browser on to the app's address with its state for the service's own state", async () => {
      const answer = await done(`?state=${await stateFor(AFTER, 'app-state')}`);
      expect(answer.status).toBe(302);
      expect(answer.headers.get('location')).toBe(`${AFTER}?state=app-state`);
      expect(answer.headers.get('cache-control')).toBe('no-store');
      const withoutState = await done(`?state=${await stateFor(AFTER)}`);
      expect(withoutState.headers.get('location')).toBe(AFTER);
    });

    it('shows the signed-out page and redirects nowhere for a forged, tampered, expired or foreign state', async () => {
      const genuine = await stateFor(AFTER, 'app-state');
      const [header, payload, signature] = genuine.split('.');
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
      const reencode = (changed: Record<string, unknown>) => Buffer.from(JSON.stringify({ ...claims, ...changed })).toString('base64url');
      const { kid } = JSON.parse(Buffer.from(header, 'base64url').toString()) as { kid: string; alg: string };
      const { privateKey } = await generateKeyPair('ES256');
      const forged = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'ES256', typ: LOGOUT_RETURN_TYP, kid }).sign(privateKey);
      const expired = await app.get(JwtSignerService).sign({ iss: app.baseUrl, client_id: clientId, post_logout_redirect_uri: AFTER, state: 'old' }, { typ: LOGOUT_RETURN_TYP, expiresInSeconds: -60 });
      const signInState = (await issueState(app, clientId)).state;

      for (const [what, query] of [
        ['tampered: another address', `?state=${header}.${reencode({ post_logout_redirect_uri: 'https://attacker.example/' })}.${signature}`],
        ['tampered: another client', `?state=${header}.${reencode({ client_id: 'another-client' })}.${signature}`],
        ['signed with another key', `?state=${forged}`],
        ['expired', `?state=${expired}`],
        ["a sign-in link's state", `?state=${signInState}`],
        ['not a JWT', '?state=bye-corp'],
        ['no state', ''],
        ['an empty state', '?state='],
        ['a repeated state', `?state=${genuine}&state=${genuine}`],
        ['a NUL', `?state=${genuine}%00`],
      ]) {
        await expectSignedOutPage(await done(query), what);
      }
    });

    it('shows the signed-out page once the address is no longer registered for the client', async () => {
      const later = await stateFor(`${AFTER}/later`, 'app-state');
      await app.get(ClientsService).update(clientId, { postLogoutRedirectUris: [AFTER] });
      await expectSignedOutPage(await done(`?state=${later}`), 'unregistered since');
    });
  });
});
