import { createServer, type Server } from 'node:http';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../setup/chromium.js';
import { freePort } from '../../setup/free-port.js';
import { type ForgedAnswer, startForgingProvider } from '../../setup/upstream/forging-provider.js';
import { cancelAtUpstream, signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// The upstream test providers themselves, with openid-client 6 as the relying party and no
// voyage-connect: the real oidc-provider process signs a user in through its own pages in Chromium,
// its tokens refresh, survive a restart and stop refreshing once the account is gone; the forging
// provider's wrong audience is refused by openid-client.

const ALICE = { sub: 'alice-sub', preferred_username: 'alice', name: 'Alice Liddell', email: 'alice@example.test', email_verified: true, password: 'rabbit-hole' };
const BOB = { sub: 'bob-sub', preferred_username: 'bob', name: 'Bob', email: 'bob@example.test', email_verified: false, password: 'builder' };

/** The relying party's callback: records what the browser brings back. */
async function startCallbackServer() {
  const port = await freePort();
  const received: URL[] = [];
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url!, `http://127.0.0.1:${port}`);
    if (url.pathname !== '/favicon.ico') received.push(url);
    response.end(`relying party at ${url.pathname}`);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${port}`, received, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** An authorization request with PKCE S256, state and nonce. */
async function authorizationRequest(config: oidc.Configuration, redirectUri: string) {
  const checks = { pkceCodeVerifier: oidc.randomPKCECodeVerifier(), expectedState: oidc.randomState(), expectedNonce: oidc.randomNonce() };
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid profile email offline_access',
    state: checks.expectedState,
    nonce: checks.expectedNonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(checks.pkceCodeVerifier),
    code_challenge_method: 'S256',
  });
  return { url, checks };
}

describe('the upstream provider harness', () => {
  let browser: Browser;
  let page: Page;
  let callback: Awaited<ReturnType<typeof startCallbackServer>>;
  let upstream: UpstreamProvider;
  let config: oidc.Configuration;

  beforeAll(async () => {
    callback = await startCallbackServer();
    [upstream, browser] = await Promise.all([
      startUpstreamProvider({
        accounts: [ALICE, BOB],
        clients: [{ client_id: 'voyage', client_secret: 'voyage-secret', redirect_uris: [`${callback.base}/callback`], post_logout_redirect_uris: [`${callback.base}/signed-out`] }],
      }),
      launchChromium(),
    ]);
    page = await browser.newPage();
    config = await oidc.discovery(new URL(upstream.issuer), 'voyage', undefined, oidc.ClientSecretBasic('voyage-secret'), { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await callback?.close();
  });

  it('signs a user in on its own page, and its tokens refresh until the account is deleted', async () => {
    const { url, checks } = await authorizationRequest(config, `${callback.base}/callback`);
    await page.goto(url.href);
    await signInAtUpstream(page, { username: 'alice', password: 'rabbit-hole' });
    expect(await page.textContent('body')).toBe('relying party at /callback');

    const returned = callback.received.at(-1)!;
    expect(returned.searchParams.get('iss')).toBe(upstream.issuer); // RFC 9207
    const tokens = await oidc.authorizationCodeGrant(config, returned, checks);
    expect(tokens.claims()).toMatchObject({ iss: upstream.issuer, sub: 'alice-sub', aud: 'voyage', nonce: checks.expectedNonce });
    expect(await oidc.fetchUserInfo(config, tokens.access_token, 'alice-sub')).toMatchObject({ preferred_username: 'alice', email: 'alice@example.test', email_verified: true });

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token); // rotated

    await upstream.kill();
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toThrow();
    await upstream.restart();
    const afterRestart = await oidc.refreshTokenGrant(config, refreshed.refresh_token!);
    expect(afterRestart.claims()?.sub).toBe('alice-sub');

    await upstream.deleteAccount('alice-sub');
    await expect(oidc.refreshTokenGrant(config, afterRestart.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('answers access_denied when the user cancels, and signs out through RP-initiated logout', async () => {
    await page.context().clearCookies();
    const cancelled = await authorizationRequest(config, `${callback.base}/callback`);
    await page.goto(cancelled.url.href);
    await cancelAtUpstream(page);
    expect(Object.fromEntries(callback.received.at(-1)!.searchParams)).toMatchObject({ error: 'access_denied', state: cancelled.checks.expectedState, iss: upstream.issuer });

    const { url } = await authorizationRequest(config, `${callback.base}/callback`);
    await page.goto(url.href);
    await signInAtUpstream(page, { username: 'bob', password: 'builder' });
    await page.goto(oidc.buildEndSessionUrl(config, { post_logout_redirect_uri: `${callback.base}/signed-out`, client_id: 'voyage', state: 'bye' }).href);
    await page.waitForURL(`${callback.base}/signed-out?state=bye`, { timeout: 10_000 });
    expect(await page.textContent('body')).toBe('relying party at /signed-out');

    await page.goto(url.href); // the session at the provider is gone: its sign-in page again
    expect(await page.getByRole('heading').textContent()).toBe('Sign-in');
  });

  it('forges ID tokens for another audience and with an unpublished key, which openid-client refuses', async () => {
    const forger = await startForgingProvider();
    try {
      const forged = await oidc.discovery(new URL(forger.issuer), 'voyage', undefined, oidc.ClientSecretPost('anything'), { execute: [oidc.allowInsecureRequests] });
      // openid-client checks the ID token's signature only when asked (OpenID Connect Core §3.1.3.7 ¶6 lets TLS stand in).
      oidc.enableNonRepudiationChecks(forged);
      const signInWith = async (answer: ForgedAnswer) => {
        forger.set(answer);
        const { url, checks } = await authorizationRequest(forged, `${callback.base}/callback`);
        const redirect = await fetch(url, { redirect: 'manual' });
        return oidc.authorizationCodeGrant(forged, new URL(redirect.headers.get('location')!), checks).catch((error: oidc.ClientError) => error);
      };

      const wrongAudience = await signInWith({ aud: 'someone-else' });
      expect(wrongAudience).toMatchObject({ code: 'OAUTH_JWT_CLAIM_COMPARISON_FAILED' });
      expect(((wrongAudience as Error).cause as { cause: unknown }).cause).toMatchObject({ claim: 'aud', expected: 'voyage' });

      expect(await signInWith({ signWithUnknownKey: true })).toMatchObject({ code: 'OAUTH_KEY_SELECTION_FAILED' });
      expect(forger.tokenRequests()).toBe(2);
      expect(forger.jwksRequests()).toBe(1);
    } finally {
      await forger.close();
    }
  });
});
