import fc from 'fast-check';
import { describe, it } from 'vitest';
import { envelope, envelopeExamples, FORM, fieldValue, headerText, JSON_TYPE, oddHeaders, pathTrick, queryOf, type RouteTemplate } from './support/arbitraries.js';
import { FUZZ_RUNS, fuzzFile, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';

/**
 * The routes without a surface of their own (JWKS, metadata, health, metrics, docs, unknown
 * paths), and every route of the service under the same envelope tricks, so no route escapes
 * odd methods, path tricks, odd headers, wrong media types and big bodies.
 */

const READ_ONLY: Record<string, string> = {
  'GET /.well-known/jwks.json': '/.well-known/jwks.json',
  'GET /.well-known/oauth-authorization-server': '/.well-known/oauth-authorization-server',
  'GET /.well-known/oauth-authorization-server/*': '/.well-known/oauth-authorization-server/tenant',
  'GET /.well-known/openid-configuration': '/.well-known/openid-configuration',
  'GET /health': '/health',
  'GET /health/live': '/health/live',
  'GET /metrics': '/metrics',
  'GET /docs': '/docs',
  'GET /docs-json': '/docs-json',
  'GET (unknown path)': '/nowhere',
};

/** Every route of the service, as a valid request to start the tricks from. */
const EVERY_ROUTE: Record<string, RouteTemplate> = {
  ...Object.fromEntries(Object.entries(READ_ONLY).map(([name, target]) => [name, { method: 'GET', target }])),
  'POST /external/oauth2helper/config/:client_id': { method: 'POST', target: '/external/oauth2helper/config/{{client_id}}' },
  'GET /external/oauth2helper/code/get/:client_id': { method: 'GET', target: '/external/oauth2helper/code/get/{{client_id}}?state={{state}}' },
  'GET /sso/authorize': { method: 'GET', target: '/sso/authorize?response_type=code&client_id={{client_id}}&state={{state}}' },
  'POST /sso/authorize': {
    method: 'POST',
    target: '/sso/authorize',
    headers: [['Cookie', 'vc_csrf=c']],
    body: { contentType: FORM, body: { form: [['response_type', 'code'], ['client_id', '{{client_id}}'], ['state', '{{state}}'], ['csrf_token', 'c'], ['username', 'nobody'], ['password', 'wrong password']] } },
  },
  'POST /sso/token': { method: 'POST', target: '/sso/token', body: { contentType: FORM, body: { form: [['grant_type', 'authorization_code'], ['code', 'x']] } }, headers: [['Authorization', '{{basic}}']] },
  'POST /sso/introspect': { method: 'POST', target: '/sso/introspect', body: { contentType: FORM, body: { form: [['token', '{{publish_token}}']] } }, headers: [['Authorization', '{{basic}}']] },
  'POST /sso/revoke': { method: 'POST', target: '/sso/revoke', body: { contentType: FORM, body: { form: [['token', 'x']] } }, headers: [['Authorization', '{{basic}}']] },
  'POST /public/api/oauth2/token': { method: 'POST', target: '/public/api/oauth2/token', body: { contentType: FORM, body: { form: [['grant_type', 'client_credentials']] } }, headers: [['Authorization', '{{cc_basic}}']] },
  'POST /voyage/notification/v1/notifications': {
    method: 'POST',
    target: '/voyage/notification/v1/notifications',
    headers: [['Authorization', 'Bearer {{publish_token}}']],
    body: { contentType: JSON_TYPE, body: { json: { recipient: '{{recipient}}' } } },
  },
  'GET /sso/userinfo': { method: 'GET', target: '/sso/userinfo', headers: [['Authorization', 'Bearer {{openid_token}}']] },
  'POST /sso/userinfo': { method: 'POST', target: '/sso/userinfo', body: { contentType: FORM, body: { form: [['access_token', '{{openid_token}}']] } } },
  'GET /voyage/notification/v1/notifications': { method: 'GET', target: '/voyage/notification/v1/notifications?since=2026-01-01T00:00:00Z', headers: [['Authorization', 'Bearer {{subscribe_token}}']] },
  'GET /voyage/notification/v1/ws/products': { method: 'GET', target: '/voyage/notification/v1/ws/products', headers: [['Authorization', 'Bearer {{subscribe_token}}']] },
};

/** The read-only routes with any query, any Accept, conditional and range headers, and tricks on their paths. */
const readOnlyRequest: fc.Arbitrary<FuzzRequest> = fc
  .constantFrom(...Object.entries(READ_ONLY))
  .chain(([route, path]) =>
    fc.oneof(
      fc.tuple(queryOf({ name: fieldValue('x'), format: fieldValue('json', 'text'), since: fieldValue('0') }), fc.array(fc.tuple(fc.constantFrom('Accept', 'If-None-Match', 'If-Modified-Since', 'Range', 'Accept-Encoding', 'Cookie', 'Authorization'), headerText), { maxLength: 3 })).map(
        ([query, headers]): FuzzRequest => ({ route, kind: 'query+headers', method: 'GET', target: `${path}?${query}`, headers: headers as [string, HeaderValue][] }),
      ),
      pathTrick(path).map((target): FuzzRequest => ({ route, kind: 'path-trick', method: 'GET', target })),
      fc.webPath().map((suffix): FuzzRequest => ({ route, kind: 'web-path', method: 'GET', target: `${path}${suffix}` })),
      oddHeaders.map(({ headers, label, framing }): FuzzRequest => {
        const request: FuzzRequest = { route, kind: `header:${label}`, method: 'GET', target: path, headers };
        if (label.startsWith('version')) return { ...request, headers: [], httpVersion: label.slice('version '.length) };
        return framing || label.startsWith('content-length') ? { ...request, body: { text: 'abcdefgh' }, framing } : request;
      }),
    ),
  );

/** Static files under /docs (Swagger UI) with traversal attempts. */
const docsAssets: fc.Arbitrary<FuzzRequest> = fc
  .oneof(
    fc.constantFrom(
      '/docs/',
      '/docs/swagger-ui.css',
      '/docs/swagger-ui-bundle.js',
      '/docs/../package.json',
      '/docs/%2e%2e/package.json',
      '/docs/..%2fpackage.json',
      '/docs/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      '/docs/....//....//etc/passwd',
      '/docs/%c0%ae%c0%ae/package.json',
      '/docs/swagger-ui.css%00.js',
      '/docs//etc/passwd',
      '/docs/\\..\\package.json',
      '/docs/static/index.html',
      '/docs-json/',
      '/docs.json',
    ),
    fc.webPath().map((path) => `/docs${path}`),
  )
  .map((target) => ({ route: 'GET /docs/*', kind: 'static-path', method: 'GET', target }));

/** Shapes tried first on every run: NUL and traversal in the paths, Transfer-Encoding and Content-Length conflicts, HTTP/1.0 without Host. */
const readOnlyExamples: FuzzRequest[] = Object.entries(READ_ONLY).flatMap(([route, path]): FuzzRequest[] => [
  { route, kind: 'path-trick', method: 'GET', target: `${path}%00` },
  { route, kind: 'path-trick', method: 'GET', target: `${path}/..%2f..%2fpackage.json` },
  { route, kind: 'header:version HTTP/1.0', method: 'GET', target: path, headers: [['Host', '']], httpVersion: 'HTTP/1.0' },
  { route, kind: 'header:content-length-twice', method: 'GET', target: path, headers: [['Content-Length', '0'], ['Content-Length', '5']], body: { text: 'abcdefgh' } },
]);

const everyRouteEnvelope = fc.constantFrom(...Object.entries(EVERY_ROUTE)).chain(([route, template]) => envelope(route, template));

describe('fuzz: every route (well-known, health, metrics, docs, and the envelope of all)', () => {
  const fuzz = fuzzFile('misc-routes');

  it('answers the read-only routes below 500, in time, storing nothing', () => fuzz.checkRequests(readOnlyRequest, { stores: () => [], examples: readOnlyExamples }), TEST_TIMEOUT_MS);

  it('answers the docs files below 500, in time, storing nothing', () => fuzz.checkRequests(docsAssets, { stores: () => [] }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies on every route', () => fuzz.checkRequests(everyRouteEnvelope, { runs: 3 * FUZZ_RUNS, examples: Object.entries(EVERY_ROUTE).flatMap(([route, template]) => envelopeExamples(route, template)) }), TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
