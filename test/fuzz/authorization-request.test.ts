import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LOOPBACK_REDIRECT } from '../factories/token-flow.factory.js';
import { envelope, envelopeExamples, fieldValue, type Fields, jwtLike, pct, queryOf, type RouteTemplate } from './support/arbitraries.js';
import { fuzzFile, type Inspection, type StoreRule, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';

/**
 * The standard authorization request (GET /sso/authorize with a redirect_uri: RFC 6749 §4.1.1,
 * OpenID Connect Core §3.1.2.1) under generated input, with and without a browser session. Beyond
 * the suite's properties: a redirect goes only to the client's registered redirect URI (never to
 * one the request made up), an error there carries the issuer (RFC 9207), the request's own state
 * and an `error_description` within RFC 6749 §4.1.2.1's characters, and only a redirect with a code
 * stores anything.
 */

const ROUTE = 'GET /sso/authorize (standard)';

const fields: Fields = {
  response_type: fieldValue('code', 'token', 'code id_token', 'none'),
  client_id: fieldValue('{{client_id}}', '{{other_client_id}}', '{{public_client_id}}', '{{cc_client_id}}', '{{disabled_client_id}}'),
  redirect_uri: fieldValue(
    '{{redirect_url}}',
    'http://127.0.0.2:9/callback',
    `${LOOPBACK_REDIRECT}#x`,
    `${LOOPBACK_REDIRECT}/../elsewhere`,
    `${LOOPBACK_REDIRECT}?x=1`,
    'HTTP://127.0.0.1:8765/callback',
    'http://localhost:8765/callback',
    'https://attacker.example/callback',
  ),
  scope: fieldValue('openid', 'openid profile email', 'openid offline_access', 'profile', 'openid  profile', 'voyage:read'),
  state: fieldValue('s-1', 'x'.repeat(2049)),
  nonce: fieldValue('n-1', 'n'.repeat(2049)),
  code_challenge: fieldValue('{{code_challenge}}', 'short'),
  code_challenge_method: fieldValue('S256', 'plain', 's256'),
  prompt: fieldValue('none', 'login', 'consent', 'select_account', 'none login', 'login consent'),
  max_age: fieldValue('0', '1', '3600', '-1', '1e3', '99999999999'),
  login_hint: fieldValue('{{username}}'),
  id_token_hint: fieldValue('{{other_user_id_token}}', '{{forged_id_token}}'),
  response_mode: fieldValue('query', 'fragment', 'form_post'),
  display: fieldValue('page', 'popup'),
  ui_locales: fieldValue('se', 'en de'),
  claims: fieldValue('{"userinfo":{"name":{"essential":true}}}'),
  request: fc.oneof(jwtLike, fieldValue()),
  request_uri: fieldValue('https://client.example/request.jwt'),
};

const valid: [string, string][] = [
  ['response_type', 'code'],
  ['client_id', '{{client_id}}'],
  ['redirect_uri', '{{redirect_url}}'],
  ['scope', 'openid profile'],
  ['state', 's-1'],
  ['nonce', 'n-1'],
  ['code_challenge', '{{code_challenge}}'],
  ['code_challenge_method', 'S256'],
];

/** No cookie (the login page), or the world user's live session (answered without a page, or "Continue as"). */
const cookie = fc.option(fc.constant<[string, HeaderValue]>(['Cookie', 'vc_session={{session}}']), { freq: 2 });

const request: fc.Arbitrary<FuzzRequest> = fc
  .tuple(queryOf(fields, valid), cookie)
  .map(([query, session]) => ({ route: ROUTE, kind: session ? 'query+session' : 'query', method: 'GET', target: `/sso/authorize?${query}`, headers: session ? [session] : [] }));

/** Only a code, sent to the client, is stored (its approval and the code); every refusal stores nothing. */
const codeIssued: StoreRule = (_request, outcome) => (outcome.status === 302 && new URL(outcome.headers.location).searchParams.has('code') ? 'any' : []);

/** RFC 6749 §4.1.2.1: the characters `error` and `error_description` may hold. */
const ERROR_TEXT = /^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/;
const ERRORS = ['invalid_request', 'unauthorized_client', 'access_denied', 'unsupported_response_type', 'invalid_scope', 'server_error', 'temporarily_unavailable', 'login_required', 'interaction_required', 'consent_required', 'request_not_supported', 'request_uri_not_supported'];

/** The query's values for `name`, decoded as the server reads them; undefined when a percent sequence does not decode. */
function queryValues(target: FuzzRequest['target'], name: string): string[] | undefined {
  if (typeof target !== 'string') return undefined;
  const query = target.slice(target.indexOf('?') + 1);
  try {
    for (const part of query.split('&')) decodeURIComponent(part.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
  return new URLSearchParams(query).getAll(name);
}

/** Where a redirect may lead, and what an error there must carry (`issuer`: the service's). */
const redirectsRightly = (issuer: () => string): Inspection => ({ filled, outcome }) => {
  if (outcome.status !== 302) return;
  const location = new URL(outcome.headers.location);
  const sentTo = `${location.origin}${location.pathname}`;
  // The helper's clients register only http://127.0.0.0/8:*/callback, and know no identity provider.
  expect(location.protocol, outcome.headers.location).toBe('http:');
  expect(location.hostname, outcome.headers.location).toMatch(/^127\./);
  expect(location.pathname, outcome.headers.location).toBe('/callback');
  const redirectUris = queryValues(filled.target, 'redirect_uri');
  if (redirectUris) expect(redirectUris, 'the redirect goes to the request’s own redirect_uri').toEqual([sentTo]);
  expect(location.searchParams.get('iss')).toBe(issuer());
  const error = location.searchParams.get('error');
  if (error === null) {
    expect(location.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    return;
  }
  expect(ERRORS).toContain(error);
  expect(location.searchParams.has('code')).toBe(false);
  const description = location.searchParams.get('error_description');
  if (description !== null) expect(description, 'error_description (RFC 6749 §4.1.2.1)').toMatch(ERROR_TEXT);
  // The request's state, returned as sent; an empty one counts as absent (RFC 6749 §3.1), a repeated one is no request at all.
  const [state, ...more] = queryValues(filled.target, 'state') ?? [null];
  if (more.length === 0 && state !== null) expect(location.searchParams.get('state')).toBe(state !== undefined && state !== '' && state.length <= 2048 ? state : null);
};

const TEMPLATE: RouteTemplate = { method: 'GET', target: `/sso/authorize?${valid.map(([name, value]) => `${name}=${pct(value)}`).join('&')}` };
const standard = (changes: Record<string, string | null>, session = false): FuzzRequest => {
  const pairs = [...valid.filter(([name]) => !(name in changes)), ...Object.entries(changes).filter((pair): pair is [string, string] => pair[1] !== null)];
  return {
    route: ROUTE,
    kind: session ? 'query+session' : 'query',
    method: 'GET',
    target: `/sso/authorize?${pairs.map(([name, value]) => `${pct(name)}=${pct(value)}`).join('&')}`,
    headers: session ? [['Cookie', 'vc_session={{session}}']] : [],
  };
};

/** Shapes tried first: echoed values holding quotes, backslashes and non-ASCII, NUL, repeats, the longest state, unregistered redirect URIs with an error or a session, prompt=none with and without a session. */
const examples: FuzzRequest[] = [
  standard({ prompt: 'a"b' }),
  standard({ prompt: 'x\\y' }),
  standard({ prompt: 'jamais-ç' }),
  standard({ scope: 'openid "profile"' }),
  standard({ response_type: 'co"de' }),
  standard({ state: 's"t\\a\u00e9' }),
  standard({ state: 'x'.repeat(2048) }),
  standard({ state: 'x'.repeat(2049) }),
  standard({ nonce: 'n\0' }),
  standard({ redirect_uri: `${LOOPBACK_REDIRECT}\0` }),
  standard({ max_age: '1'.repeat(400) }),
  standard({ login_hint: 'h'.repeat(5000) }),
  standard({ redirect_uri: 'https://attacker.example/callback', response_type: 'token' }),
  standard({ redirect_uri: 'https://attacker.example/callback', prompt: 'none' }, true),
  standard({ redirect_uri: `${LOOPBACK_REDIRECT}#x`, prompt: 'none' }),
  standard({ client_id: '{{other_client_id}}', redirect_uri: 'http://localhost:8765/callback', code_challenge: null }),
  standard({ prompt: 'none' }),
  standard({ prompt: 'none' }, true),
  standard({ prompt: 'consent' }, true),
  standard({ prompt: 'login', max_age: '0' }, true),
  standard({ id_token_hint: '{{forged_id_token}}', prompt: 'none' }, true),
  { ...standard({}), target: `${standard({}).target}&state=again` },
  { ...standard({}), target: `${standard({}).target}&redirect_uri=${pct(LOOPBACK_REDIRECT)}` },
];

describe('fuzz: the standard authorization request', () => {
  const fuzz = fuzzFile('authorization-request');
  /** Each request's own sign-in (for {{session}}) must not meet a login throttle. */
  const unthrottled = () => fuzz.world.resetLoginThrottle();

  it('answers any standard authorization request below 500, in time, redirecting only to the registered redirect_uri, storing nothing unless a code was issued', () =>
    fuzz.checkRequests(request, { stores: codeIssued, inspect: redirectsRightly(() => fuzz.world.app.env.identityUrl), beforeEach: unthrottled, examples }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies around a standard request', () =>
    fuzz.checkRequests(envelope(ROUTE, TEMPLATE), { stores: codeIssued, beforeEach: unthrottled, examples: envelopeExamples(ROUTE, TEMPLATE) }), TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
