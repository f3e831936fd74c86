import { setTimeout as sleep } from 'node:timers/promises';
import type { JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  type ConformanceRp,
  conformanceRp,
  expectCodeResponse,
  expectErrorResponse,
  followInBrowser,
  REDIRECT,
  redeem,
} from '../../factories/conformance.factory.js';
import { createClient, createUser } from '../../factories/oauth.factory.js';
import type { PortalUser } from '../../factories/token-flow.factory.js';
import { FormBrowser } from '../../setup/form-browser.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// The OpenID Foundation's Basic OP plan, the modules that authorize twice in one browser (the
// browser session): prompt=login, prompt=none, max_age, id_token_hint; and prompt=none without a
// session. Named after the modules; each asserts their conditions (CheckIdTokenAuthTimeClaimsSameIfPresent,
// CheckIdTokenSubConsistentForSecondAuthorization, CheckSecondIdTokenAuthTimeIsLaterIfPresent,
// CheckIdTokenAuthTimeClaimPresentDueToMaxAge, CheckIdTokenAuthTimeIsRecentIfPresent) besides the
// standard checks of every ID token (test/factories/conformance.factory.ts). The waits are the
// modules' own (WaitForOneSecond, WaitFor2Seconds): auth_time is in whole seconds.

describe('OpenID Connect Basic OP conformance: a second authorization in the same browser', () => {
  let app: TestApp;
  let rp: ConformanceRp;

  beforeAll(async () => {
    app = await startTestApp({});
    rp = await conformanceRp(app, await createClient(app, { redirectPatterns: [REDIRECT] }));
  });
  afterAll(() => app?.close());

  /** One authorization in `browser` as `user`: whether the login page was shown, and the checked ID token. */
  async function authorize(browser: FormBrowser, user: PortalUser, changes: Record<string, string> = {}, checks: { maxAge?: number } = {}) {
    const request = await authorizationRequest(rp, changes);
    const { callback, loginPageShown } = await followInBrowser(rp, browser, request, user);
    expectCodeResponse(rp, request, callback);
    const { claims } = await redeem(rp, request, callback, checks);
    return { loginPageShown, claims, idToken: rp.answers.at(-1)!.body.id_token as string };
  }

  /** The first authorization of a module: a new browser, the login page, a session left behind. */
  async function firstSignIn(changes: Record<string, string> = {}, checks: { maxAge?: number } = {}) {
    const browser = new FormBrowser();
    const user = await createUser(app);
    const first = await authorize(browser, user, changes, checks);
    expect(first.loginPageShown).toBe(true);
    return { browser, user, first };
  }

  /** AbstractOIDCCSameAuthTwiceServerTest: the same sign-in, so the same subject and auth_time. */
  function expectSameAuthentication(first: JWTPayload, second: JWTPayload) {
    expect(second.sub).toBe(first.sub);
    expect(second.auth_time).toBe(first.auth_time);
  }

  it('oidcc-prompt-login: the second authorization with prompt=login asks for the password again, and its auth_time is later', async () => {
    const { browser, user, first } = await firstSignIn();
    await sleep(1000);
    const second = await authorize(browser, user, { prompt: 'login' });
    expect(second.loginPageShown).toBe(true);
    expect(second.claims.sub).toBe(first.claims.sub);
    expect(second.claims.auth_time).toBeGreaterThan(first.claims.auth_time as number);
  });

  it('oidcc-prompt-none-not-logged-in: prompt=none without a session is sent back with an error that needs a user interface, its 128-character state intact', async () => {
    const request = await authorizationRequest(rp, { prompt: 'none', state: 'S'.repeat(64) + 'x'.repeat(64) });
    expect(request.state).toHaveLength(128);
    const params = expectErrorResponse(rp, request, await new FormBrowser().get(request.url));
    // CheckErrorFromAuthorizationEndpointIsOneThatRequiredAUserInterface.
    expect(['interaction_required', 'login_required', 'account_selection_required', 'consent_required']).toContain(params.error);
  });

  it('oidcc-prompt-none-logged-in: the second authorization with prompt=none is answered without a page, for the same sub and auth_time', async () => {
    const { browser, user, first } = await firstSignIn();
    const second = await authorize(browser, user, { prompt: 'none' });
    expect(second.loginPageShown).toBe(false);
    expectSameAuthentication(first.claims, second.claims);
  });

  it('oidcc-max-age-1: after 2 s, max_age=1 asks for the password again; the second ID token has an auth_time, later and recent', async () => {
    const { browser, user, first } = await firstSignIn();
    await sleep(2000);
    const second = await authorize(browser, user, { max_age: '1' }, { maxAge: 1 });
    expect(second.loginPageShown).toBe(true);
    expect(second.claims.auth_time).toEqual(expect.any(Number));
    expect(second.claims.auth_time).toBeGreaterThan(first.claims.auth_time as number);
    expect(second.claims.auth_time).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 5 * 60 - 1);
  });

  it('oidcc-max-age-10000: max_age=15000, then max_age=10000 is answered without a page; both ID tokens have the same auth_time and sub', async () => {
    const { browser, user, first } = await firstSignIn({ max_age: '15000' }, { maxAge: 15000 });
    expect(first.claims.auth_time).toEqual(expect.any(Number));
    const second = await authorize(browser, user, { max_age: '10000' }, { maxAge: 10000 });
    expect(second.loginPageShown).toBe(false);
    expect(second.claims.auth_time).toEqual(expect.any(Number));
    expectSameAuthentication(first.claims, second.claims);
  });

  it('oidcc-id-token-hint: prompt=none with the first ID token as id_token_hint is answered at once, for the same sub and auth_time', async () => {
    const { browser, user, first } = await firstSignIn();
    const second = await authorize(browser, user, { prompt: 'none', id_token_hint: first.idToken });
    expect(second.loginPageShown).toBe(false);
    expectSameAuthentication(first.claims, second.claims);
  });
});
