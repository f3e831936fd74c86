import fc from 'fast-check';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/common/crypto/opaque-token.js';
import { envelope, envelopeExamples, FORM, fieldValue, type Fields, PAGE_CSRF, pageFormPost, paramsAround, pct, queryOf, type RouteTemplate } from './support/arbitraries.js';
import { fuzzFile, type Inspection, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';
import { LOGOUT_REDIRECT } from './support/world.js';

/**
 * RP-Initiated Logout (GET and POST /sso/logout) under generated input, in a browser signed in as
 * the world's user (a fresh session each request). Beyond the suite's properties: a refused
 * logout leaves the session live; a session ends only for an ID token of its own sign-in as
 * id_token_hint, or for the "Sign out?" form posted with its CSRF token (a link alone signs no one
 * out); a redirect goes only to the post_logout_redirect_uri the client registered. Logout stores
 * no row of any table the suite counts.
 */

const PAGE = 'GET /sso/logout';
const SUBMIT = 'POST /sso/logout';

const fields: Fields = {
  id_token_hint: fieldValue('{{id_token}}', '{{other_user_id_token}}', '{{forged_id_token}}'),
  client_id: fieldValue('{{logout_client_id}}', '{{client_id}}', 'no-such-client'),
  post_logout_redirect_uri: fieldValue('{{logout_redirect}}', `${LOGOUT_REDIRECT}/x`, `${LOGOUT_REDIRECT}?x=1`, 'https://attacker.example/', 'HTTP://127.0.0.1:8765/signed-out'),
  state: fieldValue('bye-1'),
};
const valid: [string, string][] = [
  ['id_token_hint', '{{id_token}}'],
  ['post_logout_redirect_uri', '{{logout_redirect}}'],
  ['state', 'bye-1'],
];

/** The browser's cookies: its session, and the page's CSRF cookie (or another value, or none). */
const cookies = fc.oneof(
  { weight: 4, arbitrary: fc.constant(`vc_session={{session}}; vc_csrf=${PAGE_CSRF}`) },
  { weight: 2, arbitrary: fc.constant('vc_session={{session}}') },
  { weight: 1, arbitrary: fc.constant(`vc_session={{session}}; vc_csrf=other-${PAGE_CSRF}`) },
  { weight: 1, arbitrary: fc.constant(`vc_csrf=${PAGE_CSRF}`) },
);

const pageRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(queryOf(fields, valid), cookies)
  .map(([query, cookie]) => ({ route: PAGE, kind: 'query', method: 'GET', target: `/sso/logout?${query}`, headers: [['Cookie', cookie] as [string, HeaderValue]] }));

/** The "Sign out?" form as posted (its fields and csrf_token), or the logout parameters in a form without one. */
const formFields: Fields = { ...fields, csrf_token: fieldValue(PAGE_CSRF) };
const submitRequest: fc.Arbitrary<FuzzRequest> = fc.tuple(pageFormPost(SUBMIT, paramsAround([...valid, ['csrf_token', PAGE_CSRF]], formFields), formFields), cookies).map(([request, cookie]) => ({
  ...request,
  // pageFormPost's own cookie is the CSRF one alone: the session is this suite's point.
  headers: [...(request.headers ?? []).filter(([name]) => name !== 'Cookie'), ['Cookie', cookie] as [string, HeaderValue]],
}));

/** A form's, a JSON body's (the form's fields sent as JSON, which the service reads too) or a query's values for `name`, as sent. */
function sentValues(request: FuzzRequest, name: string): string[] {
  if (request.body && 'form' in request.body) return request.body.form.filter(([field]) => field === name).map(([, value]) => value);
  if (request.body && 'json' in request.body) {
    const value = (request.body.json as Record<string, unknown> | null)?.[name];
    return (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === 'string');
  }
  if (typeof request.target !== 'string') return [];
  try {
    return new URLSearchParams(request.target.slice(request.target.indexOf('?') + 1)).getAll(name);
  } catch {
    return [];
  }
}

const cookieOf = (request: FuzzRequest) => String(request.headers?.find(([name]) => name === 'Cookie')?.[1] ?? '');

describe('fuzz: logout', () => {
  const fuzz = fuzzFile('logout');
  let db: pg.Client | undefined;
  afterAll(() => db?.end());

  const unthrottled = () => fuzz.world.resetLoginThrottle();

  /** Whether the session a request was sent with has ended (undefined: it was sent without one). */
  async function sessionEnded(values: Map<string, string>): Promise<boolean | undefined> {
    const secret = values.get('session');
    if (secret === undefined) return undefined;
    if (!db) {
      db = new pg.Client({ connectionString: fuzz.world.app.databaseUrl });
      await db.connect();
    }
    const { rows } = await db.query<{ ended: boolean }>('SELECT ended_at IS NOT NULL AS ended FROM browser_sessions WHERE secret_hash = $1', [sha256(secret)]);
    return rows[0].ended;
  }

  const endsRightly: Inspection = async ({ filled, values, outcome }) => {
    if (outcome.status === 302) {
      const location = new URL(outcome.headers.location);
      expect(`${location.origin}${location.pathname}`, 'only the registered post_logout_redirect_uri').toBe(LOGOUT_REDIRECT);
    }
    const ended = await sessionEnded(values);
    if (ended === undefined) return;
    if (outcome.status >= 400) expect(ended, `a refused logout (${outcome.status}) leaves the session`).toBe(false);
    if (!ended) return;
    const hints = sentValues(filled, 'id_token_hint');
    const ownHint = hints.length === 1 && hints[0] === JSON.parse(values.get('$signin')!).idToken;
    const tokens = sentValues(filled, 'csrf_token');
    const confirmed = filled.method === 'POST' && tokens.length === 1 && tokens[0] === PAGE_CSRF && cookieOf(filled).includes(`vc_csrf=${PAGE_CSRF}`);
    expect(ownHint || confirmed, 'the session ended only for its own ID token or a CSRF-checked confirmation').toBe(true);
  };

  const TEMPLATES: Record<string, RouteTemplate> = {
    [PAGE]: { method: 'GET', target: `/sso/logout?${valid.map(([name, value]) => `${name}=${pct(value)}`).join('&')}`, headers: [['Cookie', 'vc_session={{session}}']] },
    [SUBMIT]: { method: 'POST', target: '/sso/logout', headers: [['Cookie', `vc_session={{session}}; vc_csrf=${PAGE_CSRF}`]], body: { contentType: FORM, body: { form: [...valid, ['csrf_token', PAGE_CSRF]] } } },
    'GET /sso/logout/done': { method: 'GET', target: '/sso/logout/done?state=eyJhbGciOiJSUzI1NiJ9.e30.c2ln' },
  };
  const get = (query: [string, string][], cookie = `vc_session={{session}}; vc_csrf=${PAGE_CSRF}`): FuzzRequest => ({
    route: PAGE,
    kind: 'query',
    method: 'GET',
    target: `/sso/logout?${query.map(([name, value]) => `${pct(name)}=${pct(value)}`).join('&')}`,
    headers: [['Cookie', cookie]],
  });
  const post = (form: [string, string][], cookie = `vc_session={{session}}; vc_csrf=${PAGE_CSRF}`): FuzzRequest => ({
    route: SUBMIT,
    kind: 'form+fields',
    method: 'POST',
    target: '/sso/logout',
    headers: [['Cookie', cookie], ['Content-Type', FORM]],
    body: { form },
  });

  /** Shapes tried first: another user's and a forged hint, an unregistered address, no CSRF, a repeated hint, NUL, the confirmation from another tab. */
  const examples: FuzzRequest[] = [
    get(valid),
    get([['id_token_hint', '{{other_user_id_token}}'], ['post_logout_redirect_uri', '{{logout_redirect}}']]),
    get([['id_token_hint', '{{forged_id_token}}']]),
    get([['id_token_hint', '{{id_token}}'], ['post_logout_redirect_uri', 'https://attacker.example/']]),
    get([['id_token_hint', '{{id_token}}'], ['client_id', '{{client_id}}']]),
    get([['id_token_hint', '{{id_token}}'], ['id_token_hint', '{{id_token}}']]),
    get([['id_token_hint', '{{id_token}}\0']]),
    get([['post_logout_redirect_uri', '{{logout_redirect}}'], ['client_id', '{{logout_client_id}}']]),
    get([['state', 's"t\\a\u00e9']]),
    post([['post_logout_redirect_uri', '{{logout_redirect}}'], ['client_id', '{{logout_client_id}}'], ['csrf_token', PAGE_CSRF]]),
    post([['csrf_token', PAGE_CSRF]], 'vc_session={{session}}'),
    post([['csrf_token', `other-${PAGE_CSRF}`]]),
    post([['csrf_token', '']]),
    post([['id_token_hint', '{{other_user_id_token}}']]),
  ];

  it('answers any logout link below 500, in time, storing nothing, ending the session only for its own ID token, redirecting only to the registered address', () =>
    fuzz.checkRequests(pageRequest, { stores: () => [], inspect: endsRightly, beforeEach: unthrottled, examples: examples.filter(({ route }) => route === PAGE) }), TEST_TIMEOUT_MS);

  it('answers any logout form below 500, in time, storing nothing, ending the session only for its own ID token or the CSRF-checked confirmation', () =>
    fuzz.checkRequests(submitRequest, { stores: () => [], inspect: endsRightly, beforeEach: unthrottled, examples: examples.filter(({ route }) => route === SUBMIT) }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies on the logout page and its return from a provider', () =>
    fuzz.checkRequests(fc.oneof(...Object.entries(TEMPLATES).map(([route, template]) => envelope(route, template))), {
      stores: () => [],
      beforeEach: unthrottled,
      examples: Object.entries(TEMPLATES).flatMap(([route, template]) => envelopeExamples(route, template)),
    }), TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
