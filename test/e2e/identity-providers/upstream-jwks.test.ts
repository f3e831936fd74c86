import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { IdentityProvidersService } from '../../../src/identity-providers/identity-providers.service.js';
import { issueState } from '../../factories/state.factory.js';
import { throughForgingProvider } from '../../factories/upstream.factory.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { type ForgingProvider, startForgingProvider } from '../../setup/upstream/forging-provider.js';

// The provider's JWKS as the service uses it (openid-client 6): fetched once and reused; a key
// the cached copy does not list makes it fetch the JWKS again only once that copy is at least
// 60 s old, and sign-ins that hit the unknown key together fetch it once. The forging provider
// answers the authorization request at once, so the sign-ins need no browser; the service's clock
// (it runs in this process) is moved with fake timers for Date only.

const headingOf = (html: string) => /<h1>([^<]*)<\/h1>/.exec(html)?.[1];
const SIGNED_IN = "You're signed in";
const UNKNOWN_KEY = 'the ID token is signed with a key the provider&#39;s JWKS does not list';

describe("the provider's JWKS", () => {
  let app: TestApp;
  let forge: ForgingProvider;
  let clientId: string;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: 'd'.repeat(64) });
    forge = await startForgingProvider();
    await app.get(IdentityProvidersService).create({ name: 'forge', issuer: forge.issuer, clientId: 'voyage-forge', displayName: 'Forge' }, 'forge-secret');
    clientId = (await app.get(ClientsService).create({ name: 'Bridge tablet', signIn: ['forge'] })).client_id;
  });
  afterAll(async () => {
    await forge?.close();
    await app?.close();
  });
  afterEach(() => void vi.useRealTimers());

  /** The helper's link followed as a browser would (the binding cookie carried to the callback): the callback's page. */
  async function signIn(): Promise<{ status: number; html: string }> {
    const callback = await throughForgingProvider((await issueState(app, clientId)).authorize_url, { confirm: true });
    return { status: callback.status, html: await callback.text() };
  }

  /** The service's clock (Date only: timers and I/O run on) moved `seconds` ahead of what it reads now. */
  function moveClock(seconds: number) {
    const now = Date.now();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(now + seconds * 1000);
  }

  it('fetches the JWKS once, refetches it for an unknown key only once its copy is 60 s old, and once for sign-ins that hit the unknown key together', async () => {
    expect(headingOf((await signIn()).html)).toBe(SIGNED_IN);
    expect(headingOf((await signIn()).html)).toBe(SIGNED_IN);
    expect(forge.jwksRequests()).toBe(1);

    // The provider rotates its key: the cached copy (younger than 60 s) does not list the new one.
    await forge.rotateKey();
    const early = await signIn();
    expect(early.status).toBe(400);
    expect(early.html).toContain(UNKNOWN_KEY);
    expect(forge.jwksRequests()).toBe(1);

    // 61 s later the unknown key refetches the JWKS, once.
    moveClock(61);
    expect(headingOf((await signIn()).html)).toBe(SIGNED_IN);
    expect(forge.jwksRequests()).toBe(2);
    expect(headingOf((await signIn()).html)).toBe(SIGNED_IN);
    expect(forge.jwksRequests()).toBe(2);

    // Another rotation, 61 s on: three sign-ins hit the unknown key while the JWKS request is held.
    await forge.rotateKey();
    moveClock(61);
    const release = forge.holdJwks();
    const tokenRequests = forge.tokenRequests();
    const together = Promise.all([signIn(), signIn(), signIn()]);
    try {
      await expect.poll(() => forge.tokenRequests(), { timeout: 5000 }).toBe(tokenRequests + 3);
      await expect.poll(() => forge.jwksRequests(), { timeout: 5000 }).toBeGreaterThanOrEqual(3);
      // All three have their tokens: one that did not share the first request would ask for the JWKS meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      release();
    }
    const pages = await together;
    expect(pages.map((page) => headingOf(page.html))).toEqual([SIGNED_IN, SIGNED_IN, SIGNED_IN]);
    expect(forge.jwksRequests()).toBe(3);
  });
});
