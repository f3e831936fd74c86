import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import type { PortalUser } from '../../factories/token-flow.factory.js';
import { ALICE, confirmSignIn, createSignInClient, heading, newKek, registerProvider } from '../../factories/upstream.factory.js';
import { launchChromium } from '../../setup/chromium.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { signInAtUpstream, startUpstreamProvider, type UpstreamProvider } from '../../setup/upstream/upstream-provider.js';

// A measurement, not a promise: how much time a sign-in through the identity provider adds to the
// helper flow, against a local sign-in of the same kind of client (polling), taken in turns.
// Prints one line; asserts only that every sign-in succeeded.

const ROUNDS = 20;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

describe('the time a sign-in through the identity provider adds', () => {
  let app: TestApp;
  let upstream: UpstreamProvider;
  let browser: Browser;
  let local: TestClient;
  let brokered: TestClient;
  let user: PortalUser;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek() });
    [upstream, browser] = await Promise.all([startUpstreamProvider({ accounts: [ALICE] }), launchChromium()]);
    await registerProvider(app, upstream, 'corp', 'Corp SSO');
    local = await createSignInClient(app, ['local']);
    brokered = await createSignInClient(app, ['corp']);
    user = await createUser(app);
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await app?.close();
  });

  /** From opening the sign-in link to the "You're signed in" page, in a fresh browser (a user new to the provider too). */
  async function timeSignIn(client: TestClient, signIn: (page: Page) => Promise<void>): Promise<number> {
    const { authorize_url } = await issueState(app, client.id);
    const context = await browser.newContext({ javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    try {
      const page = await context.newPage();
      const started = performance.now();
      await page.goto(authorize_url);
      await signIn(page);
      expect(await heading(page)).toBe("You're signed in");
      return performance.now() - started;
    } finally {
      await context.close();
    }
  }

  it(`measures ${ROUNDS} local and ${ROUNDS} provider sign-ins in turns, all of which succeed`, async () => {
    const times = { local: [] as number[], upstream: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      times.local.push(
        await timeSignIn(local, async (page) => {
          await page.getByLabel('Username').fill(user.username);
          await page.getByLabel('Password').fill(user.password);
          await page.getByRole('button', { name: 'Sign in' }).click();
        }),
      );
      times.upstream.push(
        await timeSignIn(brokered, async (page) => {
          await signInAtUpstream(page, { username: 'alice', password: ALICE.password });
          await confirmSignIn(page);
        }),
      );
    }
    expect([times.local.length, times.upstream.length]).toEqual([ROUNDS, ROUNDS]);
    const [localMs, upstreamMs] = [median(times.local), median(times.upstream)].map(Math.round);
    // The service's own part of the round trip, from its request log: the redirect to the provider,
    // and the callback (the code exchange with the ID token's checks, the userinfo, the linked user).
    const served = (path: RegExp, status: number) =>
      app.logs
        .filter((line) => line.msg === 'request completed' && path.test((line.req as { path: string }).path) && (line.res as { statusCode: number }).statusCode === status)
        .map((line) => line.responseTime as number);
    const [toProvider, callback] = [served(/^\/sso\/authorize$/, 302), served(/^\/sso\/callback\//, 200)].map((durations) => median(durations).toFixed(1));
    console.log(`UPSTREAM_SIGN_IN_MS median local=${localMs} upstream=${upstreamMs} added=${upstreamMs - localMs}; the service's part: redirect=${toProvider} callback=${callback}`);
  }, 180_000);
});
