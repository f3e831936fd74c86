import fc from 'fast-check';
import { describe, it } from 'vitest';
import { DEVICE_GRANT } from '../factories/device-flow.factory.js';
import {
  authorization,
  confusedBody,
  envelope,
  envelopeExamples,
  FORM,
  fieldValue,
  type Fields,
  JSON_TYPE,
  jsonFieldValue,
  jwtLike,
  objectAround,
  paramsAround,
  paramsOf,
  type RouteTemplate,
  withBody,
} from './support/arbitraries.js';
import { fuzzFile, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';

/**
 * The token endpoints under generated input: /sso/token (authorization_code, refresh_token, device_code),
 * /sso/introspect, /sso/revoke and the client-credentials /public/api/oauth2/token.
 */

const CLIENT_IDS = ['{{client_id}}', '{{other_client_id}}', '{{cc_client_id}}', '{{publisher_id}}', '{{disabled_client_id}}', '{{device_client_id}}', '{{public_client_id}}'];
const SECRETS = ['{{client_secret}}', '{{other_client_secret}}', '{{cc_client_secret}}', '{{publisher_secret}}', '{{device_client_secret}}'];
const BASIC: [string, string][] = [
  ['{{client_id}}', '{{client_secret}}'],
  ['{{other_client_id}}', '{{other_client_secret}}'],
  ['{{cc_client_id}}', '{{cc_client_secret}}'],
  ['{{publisher_id}}', '{{publisher_secret}}'],
  ['{{client_id}}', '{{other_client_secret}}'],
  ['{{device_client_id}}', '{{device_client_secret}}'],
  // A public client has no secret: any Basic credentials for it are refused.
  ['{{public_client_id}}', '{{client_secret}}'],
];
const TOKENS = ['{{access_token}}', '{{refresh_token}}', '{{publish_token}}', '{{subscribe_token}}', '{{forged_publish_token}}'];

const clientAuth: Fields = { client_id: fieldValue(...CLIENT_IDS), client_secret: fieldValue(...SECRETS) };

/** A form around `valid` or a random one; as JSON, form, wrong or missing media type, raw bytes; with or without an Authorization header. */
function tokenRequest(route: string, path: string, fields: Fields, valid: [string, string][][]): fc.Arbitrary<FuzzRequest> {
  const form = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...valid).chain((base) => paramsAround(base, fields)) }, { weight: 1, arbitrary: paramsOf(fields) });
  const jsonFields = Object.fromEntries(Object.keys(fields).map((name) => [name, jsonFieldValue()]));
  const json = fc.oneof(
    fc.constantFrom(...valid).chain((base) => objectAround(Object.fromEntries(base), jsonFields)),
    fc.jsonValue(),
  );
  const body = fc.oneof({ weight: 4, arbitrary: form.map((pairs) => ({ kind: 'form', contentType: FORM, body: { form: pairs } })) }, { weight: 3, arbitrary: confusedBody(form, json) });
  const auth = fc.option(authorization({ basic: BASIC, bearer: ['{{access_token}}', '{{publish_token}}'] }), { freq: 3 });
  return fc.tuple(body, auth).map(([chosen, header]) =>
    withBody({ route, method: 'POST', target: path, headers: header === null ? [] : [['Authorization', header]] }, header === null ? 'post-auth' : 'header-auth', chosen),
  );
}

const ssoToken = tokenRequest(
  'POST /sso/token',
  '/sso/token',
  {
    grant_type: fieldValue('authorization_code', 'refresh_token', 'client_credentials', DEVICE_GRANT, 'device_code', 'password', 'implicit'),
    code: fieldValue('{{code}}', '{{public_code}}'),
    refresh_token: fieldValue('{{refresh_token}}', '{{access_token}}'),
    scope: fieldValue('openid', 'notification:subscribe', 'openid openid', ' '),
    code_verifier: fieldValue('{{code_verifier}}', 'a'.repeat(43)),
    redirect_uri: fieldValue('{{redirect_url}}'),
    // Pending (fresh each time), just polled, approved (tokens once), denied, another device client's, already exchanged, unknown.
    device_code: fieldValue('{{device_code}}', '{{polled_device_code}}', '{{approved_device_code}}', '{{denied_device_code}}', '{{foreign_device_code}}', '{{used_device_code}}', 'no-such-device-code'),
    ...clientAuth,
  },
  [
    [['grant_type', 'authorization_code'], ['code', '{{code}}'], ['client_id', '{{client_id}}'], ['client_secret', '{{client_secret}}']],
    [['grant_type', 'refresh_token'], ['refresh_token', '{{refresh_token}}'], ['client_id', '{{client_id}}'], ['client_secret', '{{client_secret}}']],
    [['grant_type', 'authorization_code'], ['code', '{{code}}'], ['code_verifier', '{{code_verifier}}'], ['redirect_uri', '{{redirect_url}}'], ['scope', 'openid']],
    // A public client: client_id alone, its PKCE-bound code and the verifier.
    [['grant_type', 'authorization_code'], ['code', '{{public_code}}'], ['code_verifier', '{{code_verifier}}'], ['client_id', '{{public_client_id}}']],
    [['grant_type', DEVICE_GRANT], ['device_code', '{{device_code}}'], ['client_id', '{{device_client_id}}'], ['client_secret', '{{device_client_secret}}']],
    [['grant_type', DEVICE_GRANT], ['device_code', '{{approved_device_code}}'], ['client_id', '{{device_client_id}}'], ['client_secret', '{{device_client_secret}}']],
  ],
);

const inspectionFields: Fields = {
  token: fc.oneof(fieldValue(...TOKENS), jwtLike),
  token_type_hint: fieldValue('access_token', 'refresh_token', 'bogus'),
  ...clientAuth,
};
const inspectionValid: [string, string][][] = [
  [['token', '{{access_token}}'], ['token_type_hint', 'access_token'], ['client_id', '{{client_id}}'], ['client_secret', '{{client_secret}}']],
  [['token', '{{refresh_token}}'], ['token_type_hint', 'refresh_token'], ['client_id', '{{client_id}}'], ['client_secret', '{{client_secret}}']],
  [['token', '{{access_token}}'], ['client_id', '{{other_client_id}}'], ['client_secret', '{{other_client_secret}}']],
  // A public client: refused at introspection, another client's token at revocation.
  [['token', '{{access_token}}'], ['client_id', '{{public_client_id}}']],
];
const introspect = tokenRequest('POST /sso/introspect', '/sso/introspect', inspectionFields, inspectionValid);
const revoke = tokenRequest('POST /sso/revoke', '/sso/revoke', inspectionFields, inspectionValid);

const clientCredentials = tokenRequest(
  'POST /public/api/oauth2/token',
  '/public/api/oauth2/token',
  {
    grant_type: fieldValue('client_credentials', 'authorization_code', 'refresh_token'),
    scope: fieldValue('notification:publish', 'notification:subscribe', 'notification:publish notification:subscribe', 'openid', 'notification:publish\tnotification:subscribe'),
    resource: fc.oneof(fieldValue('{{api_url}}', 'http://localhost', 'ws://127.0.0.1/', 'urn:x'), fc.webUrl({ withQueryParameters: true, withFragments: true })),
    client_id: fieldValue('{{cc_client_id}}', '{{publisher_id}}', '{{client_id}}', '{{disabled_client_id}}'),
    client_secret: fieldValue('{{cc_client_secret}}', '{{publisher_secret}}', '{{client_secret}}'),
  },
  [
    [['grant_type', 'client_credentials'], ['client_id', '{{cc_client_id}}'], ['client_secret', '{{cc_client_secret}}']],
    [['grant_type', 'client_credentials'], ['client_id', '{{publisher_id}}'], ['client_secret', '{{publisher_secret}}'], ['scope', 'notification:publish'], ['resource', '{{api_url}}']],
    [['grant_type', 'client_credentials'], ['scope', 'notification:subscribe']],
  ],
);

const validForm = (pairs: [string, string][]) => ({ contentType: FORM, body: { form: pairs } });
const TEMPLATES: Record<string, RouteTemplate> = {
  'POST /sso/token': {
    method: 'POST',
    target: '/sso/token',
    body: validForm([['grant_type', 'refresh_token'], ['refresh_token', '{{refresh_token}}'], ['client_id', '{{client_id}}'], ['client_secret', '{{client_secret}}']]),
  },
  'POST /sso/introspect': { method: 'POST', target: '/sso/introspect', body: validForm([['token', '{{publish_token}}']]), headers: [['Authorization', '{{publisher_basic}}']] },
  'POST /sso/revoke': { method: 'POST', target: '/sso/revoke', body: validForm([['token', 'x'], ['client_id', '{{client_id}}'], ['client_secret', '{{client_secret}}']]) },
  'POST /public/api/oauth2/token': { method: 'POST', target: '/public/api/oauth2/token', body: validForm([['grant_type', 'client_credentials']]), headers: [['Authorization', '{{cc_basic}}']] },
};
const envelopes = fc.oneof(...Object.entries(TEMPLATES).map(([route, template]) => envelope(route, template)));

/** Shapes tried first on every run: NUL in each kind of field and in Basic credentials, repeats, JSON, invalid UTF-8. */
function examples(route: string, valid: [string, string][]): FuzzRequest[] {
  const form = (pairs: [string, string][], headers: [string, HeaderValue][] = []): FuzzRequest => ({
    route,
    kind: 'post-auth+form',
    method: 'POST',
    target: route.slice('POST '.length),
    headers: [['Content-Type', FORM], ...headers],
    body: { form: pairs },
  });
  const withNul = valid.map(([name]) => form(valid.map(([other, value]): [string, string] => [other, other === name ? `${value}\0` : value])));
  return [
    ...withNul,
    form([...valid, [valid[0][0], valid[0][1]]]),
    form(valid.filter(([name]) => !name.startsWith('client_')), [['Authorization', { basic: ['{{client_id}}\0', '{{client_secret}}'], encoding: 'raw' }]]),
    form(valid.filter(([name]) => !name.startsWith('client_')), [['Authorization', `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0x00]).toString('base64')}`]]),
    form(valid.filter(([name]) => !name.startsWith('client_')), [['Authorization', 'Basic %%%:%%%']]),
    { ...form(valid), kind: 'post-auth+json', headers: [['Content-Type', JSON_TYPE]], body: { json: Object.fromEntries(valid) } },
    { ...form(valid), kind: 'post-auth+json', headers: [['Content-Type', JSON_TYPE]], body: { json: Object.fromEntries(valid.map(([name]) => [name, { $ne: null }])) } },
    { ...form(valid), kind: 'post-auth+invalid-utf8', body: { bytes: Buffer.from(`${valid[0][0]}=%FF%FE&client_id=\xff`, 'latin1') } },
  ];
}
const SSO_VALID: [string, string][] = [['grant_type', 'authorization_code'], ['code', '{{code}}'], ['client_id', '{{client_id}}'], ['client_secret', '{{client_secret}}']];
const PUBLIC_VALID: [string, string][] = [['grant_type', 'authorization_code'], ['code', '{{public_code}}'], ['code_verifier', '{{code_verifier}}'], ['client_id', '{{public_client_id}}']];
const DEVICE_VALID: [string, string][] = [['grant_type', DEVICE_GRANT], ['device_code', '{{approved_device_code}}'], ['client_id', '{{device_client_id}}'], ['client_secret', '{{device_client_secret}}']];
/** The device grant's polls, one of each kind of device code: pending, just polled, approved, denied, another client's, used, unknown. */
const DEVICE_POLLS: FuzzRequest[] = ['{{device_code}}', '{{polled_device_code}}', '{{approved_device_code}}', '{{denied_device_code}}', '{{foreign_device_code}}', '{{used_device_code}}', 'no-such-device-code'].map((code) => ({
  route: 'POST /sso/token',
  kind: 'post-auth+form',
  method: 'POST',
  target: '/sso/token',
  headers: [['Content-Type', FORM]],
  body: { form: DEVICE_VALID.map(([name, value]): [string, string] => [name, name === 'device_code' ? code : value]) },
}));
const INSPECTION_VALID: [string, string][] = [['token', '{{access_token}}'], ['token_type_hint', 'access_token'], ['client_id', '{{client_id}}'], ['client_secret', '{{client_secret}}']];
const CC_VALID: [string, string][] = [['grant_type', 'client_credentials'], ['scope', 'notification:publish'], ['resource', '{{api_url}}'], ['client_id', '{{publisher_id}}'], ['client_secret', '{{publisher_secret}}']];

describe('fuzz: token endpoints', () => {
  const fuzz = fuzzFile('sso-token');

  it('answers any /sso/token request below 500, in time, storing nothing when it refuses', () => fuzz.checkRequests(ssoToken, { examples: [...examples('POST /sso/token', SSO_VALID), ...examples('POST /sso/token', PUBLIC_VALID), ...examples('POST /sso/token', DEVICE_VALID), ...DEVICE_POLLS] }), TEST_TIMEOUT_MS);

  it('answers any introspection request below 500, in time, storing nothing when it refuses', () => fuzz.checkRequests(introspect, { examples: examples('POST /sso/introspect', INSPECTION_VALID) }), TEST_TIMEOUT_MS);

  it('answers any revocation request below 500, in time, storing nothing when it refuses', () => fuzz.checkRequests(revoke, { examples: examples('POST /sso/revoke', INSPECTION_VALID) }), TEST_TIMEOUT_MS);

  it('answers any client-credentials request below 500, in time, storing nothing when it refuses', () => fuzz.checkRequests(clientCredentials, { examples: examples('POST /public/api/oauth2/token', CC_VALID) }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies on every token route', () => fuzz.checkRequests(envelopes, { examples: Object.entries(TEMPLATES).flatMap(([route, template]) => envelopeExamples(route, template)) }), TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
