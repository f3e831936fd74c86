import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { createSignInClient, issuedRows, linkedUser, newKek, registerProvider, throughForgingProvider } from '../../factories/upstream.factory.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { type ForgedAnswer, type ForgingProvider, startForgingProvider } from '../../setup/upstream/forging-provider.js';

// Each check of the provider's answer alone, against a provider that signs whatever it is told
// (the forging provider answers the authorization request at once, so no browser is needed): a
// failed check is a 400 page naming it, and nothing is issued or linked.

const AGAIN = 'Start the sign-in again from your device.';

const CASES: { name: string; answer: ForgedAnswer; check: string }[] = [
  { name: 'another audience', answer: { aud: 'someone-else' }, check: 'the ID token is meant for another client' },
  { name: 'another issuer', answer: { iss: 'http://127.0.0.1:9' }, check: 'the ID token was issued by another issuer' },
  { name: "another sign-in's nonce", answer: { nonce: 'not-this-sign-ins-nonce' }, check: "the ID token's nonce is not this sign-in's" },
  { name: 'no nonce', answer: { nonce: null }, check: 'the ID token has no "nonce" claim' },
  { name: 'an expiry past IDP_CLOCK_TOLERANCE', answer: { expSecondsFromNow: -120 }, check: 'the ID token has expired' },
  { name: 'an issue time in the future past IDP_CLOCK_TOLERANCE', answer: { iatSecondsFromNow: 600, expSecondsFromNow: 900 }, check: 'the ID token was issued in the future' },
  { name: 'a signature by a key the JWKS does not list', answer: { signWithUnknownKey: true }, check: "the ID token is signed with a key the provider's JWKS does not list" },
  { name: 'another authorized party (azp)', answer: { aud: ['voyage-forge', 'someone-else'], azp: 'someone-else' }, check: 'the ID token was issued to another party (azp)' },
  { name: 'no ID token at all', answer: { omitIdToken: true }, check: 'the answer has no valid ID token' },
];

const headingOf = (html: string) => /<h1>([^<]*)<\/h1>/.exec(html)?.[1];
const unescape = (text?: string) => text?.replaceAll('&#39;', "'").replaceAll('&quot;', '"');
const messageOf = (html: string) => unescape(/<\/h1>\s*<p>([^<]*)<\/p>/.exec(html)?.[1]);
const detailOf = (html: string) => unescape(/<p class="hint">([^<]*)<\/p>/.exec(html)?.[1]);

describe('the checks of the provider’s answer (ID token)', () => {
  let app: TestApp;
  let forge: ForgingProvider;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ KEYS_ENCRYPTION_KEY: newKek(), CODE_POLL_MIN_INTERVAL: '0' });
    forge = await startForgingProvider();
    await registerProvider(app, forge, 'forge', 'Forge');
    client = await createSignInClient(app, ['forge']);
  });
  afterAll(async () => {
    await forge?.close();
    await app?.close();
  });
  beforeEach(() => forge.set({}));

  /** The helper flow's sign-in link opened by a browser without JavaScript: to the provider, straight back, then the callback's page. */
  async function signIn() {
    const config = await issueState(app, client.id);
    const callback = await throughForgingProvider(config.authorize_url, { confirm: true });
    const html = await callback.text();
    return { status: callback.status, heading: headingOf(html), message: messageOf(html), detail: detailOf(html), codeUrl: config.code_url };
  }

  it.each(CASES)('refuses an ID token with $name: a 400 page naming the check, and nothing issued or linked', async ({ answer, check }) => {
    forge.set(answer);
    const before = await issuedRows(app);
    const tokenRequests = forge.tokenRequests();
    const page = await signIn();
    expect(forge.tokenRequests()).toBe(tokenRequests + 1);
    expect(page).toMatchObject({
      status: 400,
      heading: 'The sign-in could not be completed',
      message: `Forge's answer could not be verified, so nothing was signed in. ${AGAIN}`,
      detail: `What failed: ${check}. If this happens again, tell your administrator.`,
    });
    expect(await issuedRows(app)).toEqual(before);
    expect(await linkedUser(app, 'forge', 'forged-subject')).toBeUndefined();
    expect((await fetch(page.codeUrl)).status).toBe(404);
  });

  it("refuses an answer whose RFC 9207 iss names another issuer, before its code is exchanged", async () => {
    forge.set({ authorizationIss: 'http://127.0.0.1:9' });
    const before = await issuedRows(app);
    const tokenRequests = forge.tokenRequests();
    const page = await signIn();
    expect(page).toMatchObject({ status: 400, detail: 'What failed: the answer names another issuer (RFC 9207 iss). If this happens again, tell your administrator.' });
    expect(forge.tokenRequests()).toBe(tokenRequests);
    expect(await issuedRows(app)).toEqual(before);
  });

  it('accepts the same provider’s correct answer, also one expired less than IDP_CLOCK_TOLERANCE ago (the control of the cases above)', async () => {
    forge.set({ sub: 'forged-alice', claims: { preferred_username: 'forged.alice' } });
    expect(await signIn()).toMatchObject({ status: 200, heading: "You're signed in" });
    forge.set({ sub: 'forged-bob', expSecondsFromNow: -30, claims: { preferred_username: 'forged.bob' } });
    const late = await signIn();
    expect(late).toMatchObject({ status: 200, heading: "You're signed in" });
    expect((await fetch(late.codeUrl)).status).toBe(200);
  });
});
