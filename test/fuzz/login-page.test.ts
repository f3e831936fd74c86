import fc from 'fast-check';
import { describe, it } from 'vitest';
import {
  envelope,
  envelopeExamples,
  FORM,
  fieldValue,
  type Fields,
  JSON_TYPE,
  jwtLike,
  longText,
  paramsAround,
  PAGE_CSRF,
  pageFormPost,
  paramsOf,
  queryOf,
  type RouteTemplate,
  sampleOf,
} from './support/arbitraries.js';
import { fuzzFile, type StoreRule, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';

/** The login page (GET and POST /sso/authorize) under generated input. */

const PAGE = 'GET /sso/authorize';
const SUBMIT = 'POST /sso/authorize';
const CSRF = PAGE_CSRF;

const STATES = ['{{state}}', '{{redirect_state}}', '{{pkce_state}}', '{{used_state}}', '{{foreign_state}}', '{{forged_state}}'];
const state = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...STATES) },
  { weight: 1, arbitrary: jwtLike },
  { weight: 3, arbitrary: fieldValue('{{state}}') },
  { weight: 1, arbitrary: fc.tuple(fc.constant('{{state}}'), longText).map(([real, tail]) => `${real}.${tail}`) },
);

const linkFields: Fields = {
  response_type: fieldValue('code', 'token', 'code id_token'),
  client_id: fieldValue('{{client_id}}', '{{other_client_id}}', '{{cc_client_id}}', '{{disabled_client_id}}'),
  state,
};
const validLink = (stateValue: string): [string, string][] => [
  ['response_type', 'code'],
  ['client_id', '{{client_id}}'],
  ['state', stateValue],
];

const pageRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(fc.constantFrom(...STATES).chain((real) => queryOf(linkFields, validLink(real))), fc.option(fc.constantFrom<[string, HeaderValue]>(['Cookie', `vc_csrf=${CSRF}`])))
  .map(([query, cookie]) => ({ route: PAGE, kind: 'query', method: 'GET', target: `/sso/authorize?${query}`, headers: cookie ? [cookie] : [] }));

const formFields: Fields = {
  ...linkFields,
  csrf_token: fieldValue(CSRF),
  username: fieldValue('{{username}}', '{{username_upper}}', 'nobody'),
  password: fieldValue('{{password}}', 'wrong password', 'x'),
};
const validForm = (stateValue: string, password: string): [string, string][] => [
  ...validLink(stateValue),
  ['csrf_token', CSRF],
  ['username', '{{username}}'],
  ['password', password],
];

const submitRequest: fc.Arbitrary<FuzzRequest> = pageFormPost(
  SUBMIT,
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .tuple(fc.constantFrom(...STATES), fc.constantFrom('{{password}}', 'wrong password'))
        .chain(([real, password]) => paramsAround(validForm(real, password), formFields)),
    },
    { weight: 1, arbitrary: paramsOf(formFields) },
  ),
  formFields,
);

/** A login is accepted when it signs in (302 to the device, or the "return to your device" page); anything else refuses and must store nothing. */
const signedIn: StoreRule = (_request, outcome) => (outcome.status === 302 || /You(?:'|&#39;)re signed in/.test(outcome.body.toString()) ? 'any' : []);

const PAGE_TEMPLATE: RouteTemplate = { method: 'GET', target: '/sso/authorize?response_type=code&client_id={{client_id}}&state={{state}}', headers: [['Cookie', `vc_csrf=${CSRF}`]] };
const SUBMIT_TEMPLATE: RouteTemplate = {
  method: 'POST',
  target: '/sso/authorize',
  headers: [['Cookie', `vc_csrf=${CSRF}`]],
  body: { contentType: FORM, body: { form: validForm('{{state}}', 'wrong password') } },
};
const envelopes = fc.oneof(envelope(PAGE, PAGE_TEMPLATE), envelope(SUBMIT, SUBMIT_TEMPLATE));

/** Shapes tried first on every run: NUL in each parameter, repeats, a 3,000-character random username, JSON. */
const pageExamples: FuzzRequest[] = [
  '/sso/authorize?response_type=code&client_id=%00&state={{state}}',
  '/sso/authorize?response_type=code&client_id={{client_id}}%00&state={{state}}',
  '/sso/authorize?response_type=code&client_id={{client_id}}&state=%00',
  '/sso/authorize?response_type=code%00&client_id={{client_id}}&state={{state}}',
  '/sso/authorize?response_type=code&client_id={{client_id}}&client_id={{client_id}}&state={{state}}',
  '/sso/authorize?response_type=code&client_id={{client_id}}&state=%FF',
].map((target) => ({ route: PAGE, kind: 'query', method: 'GET', target, headers: [['Cookie', `vc_csrf=${CSRF}`]] }));
const submit = (pairs: [string, string][]): FuzzRequest => ({
  route: SUBMIT,
  kind: 'form+fields',
  method: 'POST',
  target: '/sso/authorize',
  headers: [['Cookie', `vc_csrf=${CSRF}`], ['Content-Type', FORM]],
  body: { form: pairs },
});
const replaced = (name: string, value: string) => validForm('{{state}}', 'wrong password').map(([field, real]): [string, string] => [field, field === name ? value : real]);
const submitExamples: FuzzRequest[] = [
  ...['response_type', 'client_id', 'state', 'csrf_token', 'username', 'password'].map((name) => submit(replaced(name, `${name === 'state' ? '{{state}}' : 'x'}\0`))),
  submit(replaced('username', sampleOf(fc.string({ unit: 'binary', minLength: 3_000, maxLength: 3_000 })))),
  submit(replaced('username', sampleOf(fc.string({ unit: 'grapheme-ascii', minLength: 3_000, maxLength: 3_000 })))),
  submit(replaced('password', sampleOf(fc.string({ unit: 'binary', minLength: 3_000, maxLength: 3_000 })))),
  submit([...validForm('{{state}}', 'wrong password'), ['username', 'again']]),
  { ...submit(validForm('{{state}}', 'wrong password')), kind: 'form+json', headers: [['Cookie', `vc_csrf=${CSRF}`], ['Content-Type', JSON_TYPE]], body: { json: Object.fromEntries(validForm('{{state}}', 'wrong password')) } },
];

describe('fuzz: login page', () => {
  const fuzz = fuzzFile('login-page');
  /** Failed logins are throttled per username and address; each attempt starts unthrottled so the password check is reached. */
  const unthrottled = () => fuzz.world.resetLoginThrottle();

  it('answers any sign-in link below 500, in time, storing nothing', () => fuzz.checkRequests(pageRequest, { stores: () => [], examples: pageExamples }), TEST_TIMEOUT_MS);

  it('answers any login form below 500, in time, storing nothing unless the user signed in', () => fuzz.checkRequests(submitRequest, { stores: signedIn, beforeEach: unthrottled, examples: submitExamples }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies on the login page', () => fuzz.checkRequests(envelopes, { stores: signedIn, beforeEach: unthrottled, examples: [...envelopeExamples(PAGE, PAGE_TEMPLATE), ...envelopeExamples(SUBMIT, SUBMIT_TEMPLATE)] }), TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
