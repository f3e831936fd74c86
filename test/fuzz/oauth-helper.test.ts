import fc from 'fast-check';
import { describe, it } from 'vitest';
import {
  badPercent,
  confusedBody,
  envelope,
  envelopeExamples,
  fieldValue,
  jsonFieldValue,
  jwtLike,
  longText,
  paramsOf,
  pct,
  queryOf,
  type RouteTemplate,
  sampleOf,
  withBody,
} from './support/arbitraries.js';
import { fuzzFile, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { FuzzRequest } from './support/requests.js';

/** The device authorization helper (its configuration and code poll) under generated input. */

const CONFIG = 'POST /external/oauth2helper/config/:client_id';
const POLL = 'GET /external/oauth2helper/code/get/:client_id';

/** The client_id path segment: real clients (helper, client-credentials only, disabled, foreign, public) and hostile text, percent-encoded or not. */
const clientIdSegment = fc.oneof(
  { weight: 6, arbitrary: fieldValue('{{client_id}}', '{{cc_client_id}}', '{{disabled_client_id}}', '{{other_client_id}}', '{{public_client_id}}').map(pct) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('{{client_id}}', ''), badPercent).map(([id, bad]) => `${id}${bad}`) },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.webSegment() },
);

/** Redirect URLs: the registered range, near misses (userinfo, fragment, non-canonical hosts, dot segments), any URL, hostile text. */
const redirectUrl = fc.oneof(
  { weight: 3, arbitrary: fieldValue('{{redirect_url}}', 'http://127.0.0.1:1/callback', 'http://[::1]:8080/callback') },
  { weight: 1, arbitrary: fc.webUrl({ withQueryParameters: true, withFragments: true }) },
  { weight: 1, arbitrary: fc.tuple(fc.oneof(fc.ipV4Extended(), fc.ipV4(), fc.ipV6().map((ip) => `[${ip}]`)), fc.integer({ min: 0, max: 99_999 })).map(([host, port]) => `http://${host}:${port}/callback`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'http://user:pw@127.0.0.1:1/callback',
      'http://127.0.0.1:1/callback#x',
      'http://127.0.0.1:1/callback?x=1',
      'http://127.0.0.1:1/./callback',
      'http://127.0.0.1:1/x/../callback',
      'http://127.1:1/callback',
      'http://2130706433:1/callback',
      'http://0x7f.1:1/callback',
      'http://0177.0.0.1:1/callback',
      'javascript:alert(1)',
      'http:\\\\127.0.0.1\\callback',
      'http://127.0.0.1:99999/callback',
      '//127.0.0.1/callback',
      'http://[fd00::1]:1/callback',
      'http://127.0.0.1:1/call%00back',
      'http://127.0.0.1:1/callback\u0000',
      'HTTP://127.0.0.1:1/callback',
      'http://127.0.0.1.:1/callback',
      'http://127.0.0.1:1/Callback',
      'http://%31%32%37.0.0.1:1/callback',
    ),
  },
);

const configQuery = queryOf({
  redirect_url: redirectUrl,
  code_challenge: fc.oneof(fieldValue('{{code_challenge}}'), fc.base64String({ minLength: 40, maxLength: 132 })),
  code_challenge_method: fieldValue('S256', 'plain', 's256'),
}, [
  ['redirect_url', '{{redirect_url}}'],
  ['code_challenge', '{{code_challenge}}'],
  ['code_challenge_method', 'S256'],
]);

/** A body nobody asked for (the config route takes its parameters in the query). */
const strayBody = fc.option(
  confusedBody(
    paramsOf({ redirect_url: redirectUrl, client_id: fieldValue('{{client_id}}') }),
    fc.oneof(fc.jsonValue(), fc.record({ redirect_url: jsonFieldValue('{{redirect_url}}'), client_id: jsonFieldValue('{{client_id}}') })),
  ),
);

const configRequest = fc.tuple(clientIdSegment, fc.option(configQuery, { freq: 4 }), strayBody).map(([id, query, body]) =>
  withBody({ route: CONFIG, method: 'POST', target: `/external/oauth2helper/config/${id}${query === null ? '' : `?${query}`}` }, 'params', body),
);

/** States: fresh, bound to a redirect or to PKCE, already used, another client's, forged, JWT-shaped garbage, hostile text, huge. */
const state = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('{{state}}', '{{redirect_state}}', '{{pkce_state}}', '{{used_state}}', '{{foreign_state}}', '{{forged_state}}') },
  { weight: 2, arbitrary: jwtLike },
  { weight: 3, arbitrary: fieldValue('{{state}}') },
  { weight: 1, arbitrary: fc.tuple(fc.constant('{{state}}'), longText).map(([real, tail]) => `${real}.${tail}`) },
);

const pollRequest = fc.tuple(clientIdSegment, fc.option(queryOf({ state }, [['state', '{{state}}']]), { freq: 6 }), strayBody).map(([id, query, body]) =>
  withBody({ route: POLL, method: 'GET', target: `/external/oauth2helper/code/get/${id}${query === null ? '' : `?${query}`}` }, 'params', body),
);

const CONFIG_TEMPLATE: RouteTemplate = {
  method: 'POST',
  target: '/external/oauth2helper/config/{{client_id}}?redirect_url={{redirect_url}}&code_challenge={{code_challenge}}&code_challenge_method=S256',
};
const POLL_TEMPLATE: RouteTemplate = { method: 'GET', target: '/external/oauth2helper/code/get/{{client_id}}?state={{state}}' };
const envelopes = fc.oneof(envelope(CONFIG, CONFIG_TEMPLATE), envelope(POLL, POLL_TEMPLATE));

/** Shapes tried first on every run: NUL and other hostile values in the path and query, repeats, a long id. */
const configExamples: FuzzRequest[] = [
  '/external/oauth2helper/config/%00',
  '/external/oauth2helper/config/{{client_id}}%00',
  '/external/oauth2helper/config/{{client_id}}%0D%0A',
  `/external/oauth2helper/config/{{client_id}}?redirect_url=${pct('http://127.0.0.1:1/callback\0')}`,
  '/external/oauth2helper/config/{{client_id}}?code_challenge=%00&code_challenge_method=S256',
  '/external/oauth2helper/config/{{client_id}}?redirect_url={{redirect_url}}&redirect_url={{redirect_url}}',
  '/external/oauth2helper/config/{{client_id}}?redirect_url=%FF',
  `/external/oauth2helper/config/${pct(sampleOf(longText))}`,
].map((target) => ({ route: CONFIG, kind: 'params', method: 'POST', target }));
const pollExamples: FuzzRequest[] = [
  '/external/oauth2helper/code/get/%00?state={{state}}',
  '/external/oauth2helper/code/get/{{client_id}}%00?state={{state}}',
  '/external/oauth2helper/code/get/{{client_id}}?state=%00',
  '/external/oauth2helper/code/get/{{client_id}}?state={{state}}%00',
  '/external/oauth2helper/code/get/{{client_id}}?state={{state}}&state={{state}}',
  '/external/oauth2helper/code/get/{{client_id}}?state=%FF',
  '/external/oauth2helper/code/get/{{client_id}}?state[a]=b',
].map((target) => ({ route: POLL, kind: 'params', method: 'GET', target }));

describe('fuzz: device authorization helper', () => {
  const fuzz = fuzzFile('oauth-helper');

  it('answers any config request below 500, in time, storing nothing when it refuses', () => fuzz.checkRequests(configRequest, { examples: configExamples }), TEST_TIMEOUT_MS);

  it('answers any code poll below 500, in time, storing nothing when it refuses', () => fuzz.checkRequests(pollRequest, { examples: pollExamples }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies on both routes', () => fuzz.checkRequests(envelopes, { examples: [...envelopeExamples(CONFIG, CONFIG_TEMPLATE), ...envelopeExamples(POLL, POLL_TEMPLATE)] }), TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
