import type { Browser, BrowserContext } from 'playwright-core';
import * as oidc from 'openid-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IdentityProvidersService } from '../../../src/identity-providers/identity-providers.service.js';
import { LOOPBACK_PATTERN } from '../../factories/token-flow.factory.js';
import { ALICE, confirmSignIn, createSignInClient, newKek, registerProvider, startDeviceCallback } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// An app signing in with OpenID Connect whose users sign in through the portal's own identity
// provider (broker mode): the ID token's and userinfo's profile claims are the provider's, and
// logout goes on to the provider's end_session_endpoint.

describe('the OpenID Connect provider in front of an identity provider', () => {
  let app: TestApp;
  let corp: UpstreamProvider;
  let browser: Browser;
  let context: BrowserContext | undefined;

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
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });

  /** An app's whole sign-in through corp (the browser kept open in `context`): its configuration, tokens and the page. */
  async function appSignIn(client: { id: string; secret?: string }, appCallbackUrl: string, received: URL[]) {
    const config = await oidc.discovery(new URL(app.baseUrl), client.id, client.secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: appCallbackUrl,
      scope: 'openid profile email',
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    await context?.close();
    context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await page.goto(url.href);
    expect(new URL(page.url()).origin).toBe(corp.issuer);
    await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
    await confirmSignIn(page);
    expect(received).toHaveLength(1);
    const tokens = await oidc.authorizationCodeGrant(config, received.pop()!, { pkceCodeVerifier: verifier, expectedNonce: nonce, idTokenExpected: true });
    return { config, tokens, claims: tokens.claims()!, page };
  }

  it("gives the app the provider's profile claims in the ID token and userinfo, and logout goes on to the provider's end_session_endpoint", async () => {
    const appCallback = await startDeviceCallback();
    try {
      const client = await createSignInClient(app, ['corp'], { redirectPatterns: [LOOPBACK_PATTERN] });
      const { config, tokens, claims, page } = await appSignIn(client, appCallback.url, appCallback.received);
      expect(claims).toMatchObject({ preferred_username: 'alice', name: ALICE.name, email: ALICE.email });
      expect(await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)).toMatchObject({ preferred_username: 'alice', email: ALICE.email });

      const endSession = new URL(((await (await fetch(`${corp.issuer}/.well-known/openid-configuration`)).json()) as { end_session_endpoint: string }).end_session_endpoint);
      await page.goto(oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token! }).href);
      expect(`${new URL(page.url()).origin}${new URL(page.url()).pathname}`).toBe(`${endSession.origin}${endSession.pathname}`);
    } finally {
      await appCallback.close();
    }
  });

  it("says email_verified false for the provider's verified address unless the provider is trusted for it (idp --trust-email), then passes it on", async () => {
    const appCallback = await startDeviceCallback();
    try {
      expect(ALICE.email_verified).toBe(true);
      const client = await createSignInClient(app, ['corp'], { redirectPatterns: [LOOPBACK_PATTERN] });
      const untrusted = await appSignIn(client, appCallback.url, appCallback.received);
      expect(untrusted.claims).toMatchObject({ email: ALICE.email, email_verified: false });
      expect(await oidc.fetchUserInfo(untrusted.config, untrusted.tokens.access_token, untrusted.claims.sub)).toMatchObject({ email: ALICE.email, email_verified: false });

      expect(await app.get(IdentityProvidersService).update('corp', { trustEmail: true })).toMatchObject({ trust_email: true });
      // Userinfo answers as the setting is now, for the token issued before it too; the next ID token says so as well.
      expect(await oidc.fetchUserInfo(untrusted.config, untrusted.tokens.access_token, untrusted.claims.sub)).toMatchObject({ email: ALICE.email, email_verified: true });
      const trusted = await appSignIn(client, appCallback.url, appCallback.received);
      expect(trusted.claims).toMatchObject({ email: ALICE.email, email_verified: true });

      await app.get(IdentityProvidersService).update('corp', { trustEmail: false });
      expect(await oidc.fetchUserInfo(trusted.config, trusted.tokens.access_token, trusted.claims.sub)).toMatchObject({ email_verified: false });
    } finally {
      await appCallback.close();
    }
  });
});
