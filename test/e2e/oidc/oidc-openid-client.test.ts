import { createServer, type Server } from 'node:http';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { LOOPBACK_PATTERN, userId } from '../../factories/token-flow.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { freePort } from '../../setup/free-port.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// The full OpenID Connect sign-in of a relying party nobody here wrote: openid-client 6 after
// OpenID Connect discovery (not the `oauth2` algorithm) builds the authorization URL with PKCE and
// nonce, a real browser (Chromium through Playwright) signs in on the service's login page and is
// sent to the app's callback, and openid-client runs the code grant with the expected state and
// nonce, validates the ID token (its signature too: non-repudiation checks on), reads userinfo and
// refreshes to a new ID token. Then single sign-on: the next sign-in in that browser asks nothing.

/** The app's own callback: a page the browser lands on, whose URL carries the authorization response. */
async function startCallback() {
  const port = await freePort();
  const server: Server = createServer((_request, response) => response.end('signed in'));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}/callback`, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe('a full sign-in with openid-client 6 and a real browser', () => {
  let app: TestApp;
  let browser: Browser;
  let client: TestClient;
  let config: oidc.Configuration;
  let callback: Awaited<ReturnType<typeof startCallback>>;

  beforeAll(async () => {
    app = await startTestApp({});
    browser = await launchChromium();
    callback = await startCallback();
    client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    config = await oidc.discovery(new URL(app.baseUrl), client.id, undefined, oidc.ClientSecretBasic(client.secret), { execute: [oidc.allowInsecureRequests] });
    // The ID tokens' signatures are checked against the discovered JWKS, not only their claims.
    oidc.enableNonRepudiationChecks(config);
  });
  afterAll(async () => {
    await browser?.close();
    await callback?.close();
    await app?.close();
  });

  /** openid-client's authorization URL (PKCE S256, state, nonce), opened in `page`; `signIn` fills the login form. */
  async function authorize(page: Page, signIn?: { username: string; password: string }) {
    const verifier = oidc.randomPKCECodeVerifier();
    const [state, nonce] = [oidc.randomState(), oidc.randomNonce()];
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: callback.url,
      scope: 'openid profile',
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const landed = page.waitForURL(`${callback.url}?**`);
    await page.goto(url.href);
    if (signIn) {
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in');
      await page.getByLabel('Username').fill(signIn.username);
      await page.getByLabel('Password').fill(signIn.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
    }
    await landed;
    return oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
  }

  it('signs in through the login page: the code grant with state and nonce, a valid ID token, userinfo, and a refresh with a new ID token', async () => {
    const user = await createUser(app);
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    const before = Math.floor(Date.now() / 1000);

    const tokens = await authorize(page, user);
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: app.env.identityUrl, aud: client.id, sub: await userId(app, user), preferred_username: user.username });
    expect(claims.auth_time).toBeGreaterThanOrEqual(before - 1);
    expect(claims.sid).toEqual(expect.any(String));
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'openid profile', refresh_token: expect.any(String) });

    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(info).toMatchObject({ sub: claims.sub, preferred_username: user.username, name: user.username });

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    const again = refreshed.claims()!;
    expect(refreshed.id_token).not.toBe(tokens.id_token);
    expect(again).toMatchObject({ iss: claims.iss, sub: claims.sub, aud: claims.aud, auth_time: claims.auth_time, sid: claims.sid });
    expect(again).not.toHaveProperty('nonce');
    await expect(oidc.fetchUserInfo(config, refreshed.access_token, claims.sub)).resolves.toMatchObject({ sub: claims.sub });

    // Single sign-on: the next authorization in this browser comes straight back, the same sign-in.
    const next = await authorize(page);
    expect(next.claims()).toMatchObject({ sub: claims.sub, auth_time: claims.auth_time, sid: claims.sid });
    await context.close();
  });
});
