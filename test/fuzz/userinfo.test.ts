import fc from 'fast-check';
import { describe, it } from 'vitest';
import {
  authorization,
  confusedBody,
  envelope,
  envelopeExamples,
  FORM,
  fieldValue,
  JSON_TYPE,
  jsonFieldValue,
  objectAround,
  paramsAround,
  queryOf,
  type RouteTemplate,
  withBody,
} from './support/arbitraries.js';
import { fuzzFile, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';

/**
 * GET and POST /sso/userinfo under generated input: the token in the header, in the form body,
 * in both, in neither (a user's token with openid, one without, a client's, a forged one, any
 * text), and every body and media type. Userinfo reads only: no request stores anything.
 */

const PATH = '/sso/userinfo';
const GET = `GET ${PATH}`;
const POST = `POST ${PATH}`;
const TOKENS = ['{{openid_token}}', '{{profile_token}}', '{{access_token}}', '{{subscribe_token}}', '{{forged_openid_token}}'];

/** Mostly a real token, else any Authorization header, or none. */
const bearer: fc.Arbitrary<HeaderValue | null> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...TOKENS).map((token) => `Bearer ${token}`) },
  { weight: 3, arbitrary: authorization({ bearer: TOKENS, basic: [['{{client_id}}', '{{client_secret}}']] }) },
  { weight: 2, arbitrary: fc.constant(null) },
);
const headers = (auth: HeaderValue | null): [string, HeaderValue][] => (auth === null ? [] : [['Authorization', auth]]);

/** GET: any header, and a query (an access_token there is not a way to send it: RFC 6750 §2.3 is not offered). */
const getRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(bearer, fc.option(queryOf({ access_token: fieldValue(...TOKENS), scope: fieldValue('openid') }), { freq: 3 }))
  .map(([auth, query]) => ({ route: GET, kind: auth === null ? 'no-header' : 'header', method: 'GET', target: query ? `${PATH}?${query}` : PATH, headers: headers(auth) }));

/** POST: the token as a form field around the valid one, as JSON, any body or none; with or without a header. */
const formBody = paramsAround([['access_token', '{{openid_token}}']], { access_token: fieldValue(...TOKENS) });
const postBody = fc.oneof(
  { weight: 4, arbitrary: formBody.map((form) => ({ kind: 'form', contentType: FORM, body: { form } })) },
  { weight: 3, arbitrary: confusedBody(formBody, fc.oneof(objectAround({ access_token: '{{openid_token}}' }, { access_token: jsonFieldValue(...TOKENS) }), fc.jsonValue())) },
  { weight: 1, arbitrary: fc.constant(null) },
);
const postRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(bearer, postBody)
  .map(([auth, body]) => withBody({ route: POST, method: 'POST', target: PATH, headers: headers(auth) }, auth === null ? 'no-header' : 'header', body));

const TEMPLATES: Record<string, RouteTemplate> = {
  [GET]: { method: 'GET', target: PATH, headers: [['Authorization', 'Bearer {{openid_token}}']] },
  [POST]: { method: 'POST', target: PATH, body: { contentType: FORM, body: { form: [['access_token', '{{openid_token}}']] } } },
};

/** Shapes tried first: the token in both places, twice in the body, with NUL, as JSON, and each real token in each place. */
const examples: FuzzRequest[] = [
  ...TOKENS.flatMap((token): FuzzRequest[] => [
    { route: GET, kind: 'header', method: 'GET', target: PATH, headers: [['Authorization', `Bearer ${token}`]] },
    { route: POST, kind: 'no-header+form', method: 'POST', target: PATH, headers: [['Content-Type', FORM]], body: { form: [['access_token', token]] } },
  ]),
  { route: POST, kind: 'header+form', method: 'POST', target: PATH, headers: [['Authorization', 'Bearer {{openid_token}}'], ['Content-Type', FORM]], body: { form: [['access_token', '{{openid_token}}']] } },
  { route: POST, kind: 'no-header+form', method: 'POST', target: PATH, headers: [['Content-Type', FORM]], body: { form: [['access_token', '{{openid_token}}'], ['access_token', '{{openid_token}}']] } },
  { route: POST, kind: 'no-header+form', method: 'POST', target: PATH, headers: [['Content-Type', FORM]], body: { form: [['access_token', '{{openid_token}}\0']] } },
  { route: POST, kind: 'no-header+json', method: 'POST', target: PATH, headers: [['Content-Type', JSON_TYPE]], body: { json: { access_token: '{{openid_token}}' } } },
  { route: GET, kind: 'no-header', method: 'GET', target: `${PATH}?access_token={{openid_token}}` },
];

describe('fuzz: /sso/userinfo', () => {
  const fuzz = fuzzFile('userinfo');

  it('answers GET below 500, in time, storing nothing', () => fuzz.checkRequests(getRequest, { stores: () => [], examples: examples.filter(({ route }) => route === GET) }), TEST_TIMEOUT_MS);

  it('answers POST below 500, in time, storing nothing', () => fuzz.checkRequests(postRequest, { stores: () => [], examples: examples.filter(({ route }) => route === POST) }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies', () =>
    fuzz.checkRequests(fc.oneof(...Object.entries(TEMPLATES).map(([route, template]) => envelope(route, template))), {
      stores: () => [],
      examples: Object.entries(TEMPLATES).flatMap(([route, template]) => envelopeExamples(route, template)),
    }), TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
