import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestClient } from '../factories/oauth.factory.js';
import { issueState } from '../factories/state.factory.js';
import { ALICE, createSignInClient, newKek, registerProvider } from '../factories/upstream.factory.js';
import { startUpstreamProvider, type UpstreamProvider } from '../setup/upstream/upstream-provider.js';
import { anyText, badPercent, envelope, envelopeExamples, fieldValue, headerText, jwtLike, longText, pct, queryOf, type RouteTemplate } from './support/arbitraries.js';
import { expectProcessAlive, FuzzSession, refusalsStoreNothing, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { Outcome } from './support/http.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';
import { World } from './support/world.js';

/**
 * GET /sso/callback/NAME under generated input, with a real provider running (oidc-provider):
 * provider names, and query strings around a real provider answer — a sign-in started for the
 * request, its browser's binding cookie — with state, code, error, iss changed, repeated, huge,
 * with control characters or any Unicode. Never a 5xx (the provider runs, so not even a 503),
 * never a stack trace, and a refusal stores nothing.
 */

const CALLBACK = 'GET /sso/callback/:name';

/** Placeholders of this file, filled at send time: a sign-in started for the request (its state and binding cookie), the provider's issuer. */
const PLACEHOLDER = /\{\{(upstream_state|binding|issuer)\}\}/g;

const name = fc.oneof(
  { weight: 6, arbitrary: fc.constant('corp') },
  { weight: 2, arbitrary: fieldValue('corp').map(pct) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('corp', ''), badPercent).map(([known, bad]) => `${known}${bad}`) },
  { weight: 1, arbitrary: fc.constantFrom('CORP', 'nosuch', 'a'.repeat(63), 'a'.repeat(64), '-corp', 'corp-', 'corp_1', '0', '%2e%2e', '..') },
  { weight: 1, arbitrary: fc.webSegment() },
);

const state = fc.oneof(
  { weight: 4, arbitrary: fc.constant('{{upstream_state}}') },
  { weight: 3, arbitrary: fieldValue('{{upstream_state}}') },
  { weight: 1, arbitrary: jwtLike },
  { weight: 1, arbitrary: fc.tuple(fc.constant('{{upstream_state}}'), longText).map(([real, tail]) => `${real}${tail}`) },
);

const callbackQuery = queryOf(
  {
    state,
    code: fieldValue('not-a-code-the-provider-issued', 'x'),
    error: fieldValue('access_denied', 'invalid_request', 'server_error', 'login_required', 'temporarily_unavailable'),
    error_description: anyText,
    iss: fieldValue('{{issuer}}', 'http://127.0.0.1:9', 'https://evil.example'),
    session_state: anyText,
  },
  [
    ['code', 'not-a-code-the-provider-issued'],
    ['state', '{{upstream_state}}'],
    ['iss', '{{issuer}}'],
  ],
);

/** The binding cookie: the started sign-in's, none, another value, doubled, under the https name, or hostile. */
const cookie: fc.Arbitrary<HeaderValue | null> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('{{binding}}') },
  { weight: 2, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant(`vc_upstream=${'A'.repeat(43)}`) },
  { weight: 1, arbitrary: fc.constant('vc_upstream=other; {{binding}}') },
  { weight: 1, arbitrary: fc.constant(`__Host-vc_upstream=${'A'.repeat(43)}`) },
  { weight: 1, arbitrary: headerText.map((text) => `vc_upstream=${text}`) },
);

const callbackRequest = fc.tuple(name, fc.option(callbackQuery, { freq: 8 }), cookie).map(
  ([provider, query, binding]): FuzzRequest => ({
    route: CALLBACK,
    kind: 'params',
    method: 'GET',
    target: `/sso/callback/${provider}${query === null ? '' : `?${query}`}`,
    headers: binding === null ? [] : [['Cookie', binding]],
  }),
);

const TEMPLATE: RouteTemplate = { method: 'GET', target: '/sso/callback/corp?code=x&state={{upstream_state}}&iss={{issuer}}', headers: [['Cookie', '{{binding}}']] };

/** Shapes tried first on every run. */
const examples: FuzzRequest[] = [
  '/sso/callback/corp?code=x&state={{upstream_state}}&iss={{issuer}}',
  '/sso/callback/corp?error=access_denied&state={{upstream_state}}',
  '/sso/callback/corp?error=%00&state={{upstream_state}}',
  `/sso/callback/corp?error=${pct('\u2028\ud800')}&state={{upstream_state}}`,
  '/sso/callback/corp?code=x&state={{upstream_state}}&state={{upstream_state}}',
  '/sso/callback/corp?code=x&code=y&state={{upstream_state}}',
  '/sso/callback/corp?code=x&state={{upstream_state}}&iss=https%3A%2F%2Fevil.example',
  '/sso/callback/corp?code=x&state={{upstream_state}}%00',
  `/sso/callback/corp?code=x&state=${'s'.repeat(20_000)}`,
  '/sso/callback/corp?state[a]=b',
  '/sso/callback/corp%00?code=x&state={{upstream_state}}',
  '/sso/callback/nosuch?code=x&state={{upstream_state}}',
  '/sso/callback/?code=x',
].map((target) => ({ route: CALLBACK, kind: 'params', method: 'GET', target, headers: [['Cookie', '{{binding}}']] }));

/** What may reveal internals: a stack frame, a source path, a module path. */
const STACK_TRACE = /\n\s+at \S|node_modules|\/src\/|\.[jt]s:\d+|Error: /;

describe('fuzz: the identity provider callback', () => {
  const fuzz: FuzzSession = new FuzzSession('upstream-callback');
  let upstream: UpstreamProvider;
  let client: TestClient;

  beforeAll(async () => {
    [fuzz.world, upstream] = await Promise.all([World.start({ KEYS_ENCRYPTION_KEY: newKek() }), startUpstreamProvider({ accounts: [ALICE] })]);
    await registerProvider(fuzz.world.app, upstream, 'corp', 'Corp SSO');
    client = await createSignInClient(fuzz.world.app, ['corp']);
  });
  afterAll(async () => {
    await fuzz.summarize();
    await fuzz.world?.app.close();
    await upstream?.stop();
  });

  /** The sign-in link of the helper flow opened: the service's redirect to the provider gives the state, and the browser's binding cookie. */
  async function startSignIn() {
    const { authorize_url } = await issueState(fuzz.world.app, client.id);
    const response = await fetch(authorize_url, { redirect: 'manual' });
    if (response.status !== 302) throw new Error(`the sign-in link answered ${response.status}`);
    const state = new URL(response.headers.get('location')!).searchParams.get('state')!;
    return { state, cookie: response.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ') };
  }

  /** This file's placeholders filled (a fresh sign-in for each request that names one). */
  async function fill(request: FuzzRequest): Promise<FuzzRequest> {
    const text = JSON.stringify([typeof request.target === 'string' ? request.target : Buffer.from(request.target).toString('latin1'), request.headers]);
    const signIn = /\{\{(upstream_state|binding)\}\}/.test(text) ? await startSignIn() : undefined;
    const values: Record<string, string> = { upstream_state: signIn?.state ?? '', binding: signIn?.cookie ?? '', issuer: pct(upstream.issuer) };
    const replace = (value: string) => value.replace(PLACEHOLDER, (_, key: string) => values[key]);
    const target = typeof request.target === 'string' ? replace(request.target) : Buffer.from(replace(Buffer.from(request.target).toString('latin1')), 'latin1');
    const headers = request.headers?.map(([header, value]): [string, HeaderValue] => [header, typeof value === 'string' ? replace(value) : value]);
    return { ...request, target, headers };
  }

  function expectNoStackTrace(request: FuzzRequest, outcome: Extract<Outcome, { kind: 'response' }>) {
    const body = outcome.body.toString('utf8');
    if (STACK_TRACE.test(body)) throw new Error(`${request.route} [${request.kind}] answered ${outcome.status} with what looks like internals: ${body.slice(0, 400)}`);
  }

  async function check(arbitrary: fc.Arbitrary<FuzzRequest>, examples: FuzzRequest[]) {
    await fuzz.check(
      arbitrary,
      async (request) => {
        const filled = await fill(request);
        const before = await fuzz.counts();
        const outcome = await fuzz.sendFilled(request, filled);
        fuzz.expectAnswered(request, outcome);
        expectNoStackTrace(request, outcome);
        fuzz.expectStoredOnly(before, await fuzz.counts(), refusalsStoreNothing(request, outcome), request, outcome);
        expectProcessAlive();
      },
      undefined,
      examples,
    );
  }

  it('answers any callback below 500, in time, without internals, storing nothing when it refuses', () => check(callbackRequest, examples), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers and bodies on the callback', () => check(envelope(CALLBACK, TEMPLATE), envelopeExamples(CALLBACK, TEMPLATE)), TEST_TIMEOUT_MS);

  it('still signs in through the provider afterwards (a started sign-in is refused only for its own reasons), and the process never saw an uncaught error', async () => {
    const { state, cookie: binding } = await startSignIn();
    const refused = await fetch(`${fuzz.world.app.baseUrl}/sso/callback/corp?code=x&state=${encodeURIComponent(state)}&iss=${encodeURIComponent(upstream.issuer)}`, { headers: { cookie: binding } });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('What failed: it answered invalid_grant.');
    await fuzz.expectServiceStillWorks();
  });
});
