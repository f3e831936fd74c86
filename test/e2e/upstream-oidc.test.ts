import type { Browser, BrowserContext } from 'playwright-core';
import * as oidc from 'openid-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LOOPBACK_PATTERN } from '../factories/token-flow.factory.js';
import { ALICE, confirmSignIn, createSignInClient, newKek, registerProvider, startDeviceCallback } from '../factories/upstream.factory.js';
import { launchChromium } from '../setup/chromium.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../setup/upstream/upstream-provider.js';

// An app signing in with OpenID Connect whose users sign in through the portal's own identity
// provider (broker mode): the ID token's and userinfo's profile claims are the provider's, and
// logout goes on to the provider's end_session_endpoint.

describe('the OpenID Connect provider in front of an identity provider', () => {
  let app: TestApp;
  let corp: UpstreamProvider;
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek() });
    [corp, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), launchChromium()]);
    await registerProvider(app, corp, 'corp', 'Corp SSO');
  });
  afterAll(async () => {
    await browser?.close();
    await corp?.stop();
    await app?.close();
  });
  afterEach(async () => context?.close());

  it("gives the app the provider's profile claims in the ID token and userinfo, and logout goes on to the provider's end_session_endpoint", async () => {
    const appCallback = await startDeviceCallback();
    try {
      const client = await createSignInClient(app, ['corp'], { redirectPatterns: [LOOPBACK_PATTERN] });
      const config = await oidc.discovery(new URL(app.baseUrl), client.id, client.secret, undefined, { execute: [oidc.allowInsecureRequests] });
      const verifier = oidc.randomPKCECodeVerifier();
      const nonce = oidc.randomNonce();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: appCallback.url,
        scope: 'openid profile email',
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      context = await browser.newContext({ javaScriptEnabled: false });
      context.setDefaultTimeout(10_000);
      const page = await context.newPage();
      await page.goto(url.href);
      expect(new URL(page.url()).origin).toBe(corp.issuer);
      await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
      await confirmSignIn(page);
      expect(appCallback.received).toHaveLength(1);

      const tokens = await oidc.authorizationCodeGrant(config, appCallback.received[0], { pkceCodeVerifier: verifier, expectedNonce: nonce, idTokenExpected: true });
      const claims = tokens.claims()!;
      expect(claims).toMatchObject({ preferred_username: 'alice', name: ALICE.name, email: ALICE.email, email_verified: true });
      expect(await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)).toMatchObject({ preferred_username: 'alice', email: ALICE.email });

      const endSession = new URL(((await (await fetch(`${corp.issuer}/.well-known/openid-configuration`)).json()) as { end_session_endpoint: string }).end_session_endpoint);
      await page.goto(oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token! }).href);
      expect(`${new URL(page.url()).origin}${new URL(page.url()).pathname}`).toBe(`${endSession.origin}${endSession.pathname}`);
    } finally {
      await appCallback.close();
    }
  });
});
