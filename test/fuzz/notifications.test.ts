import fc from 'fast-check';
import { describe, it } from 'vitest';
import {
  authorization,
  confusedBody,
  deepValue,
  envelope,
  envelopeExamples,
  fieldValue,
  JSON_TYPE,
  jsonFieldValue,
  nestedJson,
  objectAround,
  paramsOf,
  queryOf,
  type RouteTemplate,
  withBody,
} from './support/arbitraries.js';
import { fuzzFile, type StoreRule, TEST_TIMEOUT_MS } from './support/fuzz.js';
import { deepMarker, type FuzzRequest, type HeaderValue } from './support/requests.js';

/** The notification routes (publish, history) under generated input. */

const PATH = '/voyage/notification/v1/notifications';
const PUBLISH = `POST ${PATH}`;
const BATCH_PATH = `${PATH}/batch`;
const BATCH = `POST ${BATCH_PATH}`;
const HISTORY = `GET ${PATH}`;

/** Seed 001's fields plus recipient; `{{uuid}}` is a fresh UUID per request, so a valid body is a new notification. */
const VALID = {
  recipient: '{{recipient}}',
  correlationId: '{{uuid}}',
  productName: 'RouteAdvice',
  origin: 'RouteConfigurationService',
  status: 'New',
  statusTimestamp: '2026-11-21T08:30:00.123Z',
  deliverables: [{ productType: 'pdf' }],
  customerReferenceId: 'CUST-REF-42',
  routeCalculationScheduleId: '9f1d3c52-7a3e-4a0f-b1d2-6c8e5f4a2b11',
  warnings: ['Image 3 of the PDF could not be generated'],
  creationDate: '2026-11-21T08:29:59.987Z',
};

const timestamp = fc.oneof(
  jsonFieldValue('2026-11-21T08:30:00.123Z'),
  fc.date().map((date) => (Number.isNaN(date.getTime()) ? 'Invalid Date' : date.toISOString())),
  fc.constantFrom('2026-02-30T00:00:00.000Z', '2026-11-21T08:30:00Z', '2026-11-21T24:00:00.000Z', '+275760-09-13T00:00:00.000Z', '2026-11-21T08:30:00.123+25:00', '2026-11-21t08:30:00.123z'),
);
const uuid = fc.oneof(jsonFieldValue('{{uuid}}'), fc.uuid(), fc.uuid().map((value) => value.toUpperCase()), fc.uuid().map((value) => `{${value}}`));

const fields: Record<string, fc.Arbitrary<unknown>> = {
  recipient: jsonFieldValue('{{recipient}}', '{{publisher_id}}', '{{client_id}}', 'unknown-client'),
  correlationId: uuid,
  routeCalculationScheduleId: uuid,
  productName: jsonFieldValue('RouteAdvice'),
  origin: jsonFieldValue('RouteConfigurationService'),
  status: jsonFieldValue('New', 'Done'),
  customerReferenceId: jsonFieldValue('CUST-REF-42'),
  statusTimestamp: timestamp,
  creationDate: timestamp,
  deliverables: fc.oneof(
    fc.array(fc.record({ productType: jsonFieldValue('pdf', 'rtz') }, { requiredKeys: [] }), { maxLength: 4 }),
    fc.array(fc.constant({ productType: 'pdf' }), { minLength: 51, maxLength: 60 }),
    fc.array(nestedJson, { maxLength: 3 }),
    jsonFieldValue(),
  ),
  warnings: fc.oneof(fc.array(jsonFieldValue('w'), { maxLength: 4 }), fc.array(fc.constant('w'), { minLength: 101, maxLength: 110 }), jsonFieldValue()),
};

/** Mostly the publisher's real token, so validation and storage are reached; otherwise any Authorization header or none. */
const publishAuth: fc.Arbitrary<HeaderValue | null> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('Bearer {{publish_token}}') },
  { weight: 3, arbitrary: authorization({ bearer: ['{{publish_token}}', '{{subscribe_token}}', '{{forged_publish_token}}'], basic: [['{{publisher_id}}', '{{publisher_secret}}']] }) },
  { weight: 1, arbitrary: fc.constant(null) },
);

const publishBody = fc.oneof(
  { weight: 6, arbitrary: objectAround(VALID, fields).map((json) => ({ kind: 'json', contentType: JSON_TYPE, body: { json } })) },
  {
    weight: 3,
    arbitrary: confusedBody(
      paramsOf(Object.fromEntries(Object.entries(VALID).map(([name, value]) => [name, fieldValue(String(value))]))),
      fc.oneof(objectAround(VALID, fields), fc.jsonValue(), fc.array(objectAround(VALID, fields), { maxLength: 2 })),
    ),
  },
  { weight: 1, arbitrary: deepValue.map((marker) => ({ kind: 'deep', contentType: JSON_TYPE, body: { json: marker } })) },
);

const publishRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(publishBody, publishAuth)
  .map(([body, auth]) => withBody({ route: PUBLISH, method: 'POST', target: PATH, headers: auth === null ? [] : [['Authorization', auth]] }, auth === null ? 'no-token' : 'token', body));

/** A batch: arrays of generated publish bodies (valid, broken, any JSON), or anything that is not such an array. */
const batchBody = fc.oneof(
  { weight: 6, arbitrary: fc.array(fc.oneof({ weight: 3, arbitrary: objectAround(VALID, fields) }, { weight: 1, arbitrary: fc.jsonValue() }), { maxLength: 6 }) },
  { weight: 1, arbitrary: fc.oneof(objectAround(VALID, fields), fc.jsonValue()) },
  { weight: 1, arbitrary: fc.array(fc.constant({}), { minLength: 1001, maxLength: 1003 }) },
);
const batchRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(batchBody, publishAuth)
  .map(([json, auth]) =>
    withBody({ route: BATCH, method: 'POST', target: BATCH_PATH, headers: auth === null ? [] : [['Authorization', auth]] }, auth === null ? 'no-token' : 'token', {
      kind: 'json',
      contentType: JSON_TYPE,
      body: { json },
    }),
  );

/** A publish is accepted with 202, which stores one notification (or none for a repeat) and nothing else. */
const publishStores: StoreRule = (_request, outcome) => (outcome.status === 202 ? ['notifications'] : []);

const since = fc.oneof(
  fieldValue('2026-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z'),
  fc.date().map((date) => (Number.isNaN(date.getTime()) ? 'Invalid Date' : date.toISOString())),
  fc.constantFrom('2026-02-30T00:00:00Z', '9999-12-31T23:59:59.999999999Z', '0000-01-01T00:00:00Z', '2026-01-01T00:00:00+99:99', '-271821-04-20T00:00:00Z', '2026-01-01'),
);
const historyAuth: fc.Arbitrary<HeaderValue | null> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('Bearer {{subscribe_token}}') },
  { weight: 3, arbitrary: authorization({ bearer: ['{{subscribe_token}}', '{{publish_token}}', '{{forged_subscribe_token}}'], basic: [['{{cc_client_id}}', '{{cc_client_secret}}']] }) },
  { weight: 1, arbitrary: fc.constant(null) },
);
const historyRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(fc.option(queryOf({ since }, [['since', '2026-01-01T00:00:00Z']]), { freq: 8 }), historyAuth)
  .map(([query, auth]) => ({
    route: HISTORY,
    kind: auth === null ? 'no-token' : 'token',
    method: 'GET',
    target: query === null ? PATH : `${PATH}?${query}`,
    headers: auth === null ? [] : [['Authorization', auth]],
  }));

const PUBLISH_TEMPLATE: RouteTemplate = { method: 'POST', target: PATH, headers: [['Authorization', 'Bearer {{publish_token}}']], body: { contentType: JSON_TYPE, body: { json: VALID } } };
const HISTORY_TEMPLATE: RouteTemplate = { method: 'GET', target: `${PATH}?since=2026-01-01T00:00:00Z`, headers: [['Authorization', 'Bearer {{subscribe_token}}']] };
const envelopes = fc.oneof(envelope(PUBLISH, PUBLISH_TEMPLATE), envelope(HISTORY, HISTORY_TEMPLATE));

/** Shapes tried first on every run: deep JSON (whole body and in a field), NUL in each text field, wrong types, a form. */
const publishJson = (json: unknown, kind = 'token+json'): FuzzRequest => ({
  route: PUBLISH,
  kind,
  method: 'POST',
  target: PATH,
  headers: [['Authorization', 'Bearer {{publish_token}}'], ['Content-Type', JSON_TYPE]],
  body: { json },
});
const publishExamples: FuzzRequest[] = [
  publishJson(deepMarker('array', 5_000), 'token+deep'),
  publishJson(deepMarker('object', 5_000), 'token+deep'),
  publishJson({ ...VALID, warnings: deepMarker('array', 1_000) }),
  publishJson({ ...VALID, deliverables: [{ productType: deepMarker('object', 1_000) }] }),
  ...['recipient', 'productName', 'origin', 'status', 'customerReferenceId'].map((name) => publishJson({ ...VALID, [name]: `x\0` })),
  publishJson({ ...VALID, warnings: ['\0'], deliverables: [{ productType: 'pdf\0' }] }),
  publishJson({ ...VALID, recipient: ['{{recipient}}'], correlationId: 1, deliverables: 'pdf', warnings: { a: 1 } }),
  publishJson(Object.assign(Object.create(null) as object, JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {}}}'), VALID)),
  { ...publishJson(VALID), kind: 'token+form', headers: [['Authorization', 'Bearer {{publish_token}}'], ['Content-Type', 'application/x-www-form-urlencoded']], body: { form: Object.entries(VALID).map(([name, value]): [string, string] => [name, String(value)]) } },
];
const batchExamples: FuzzRequest[] = [
  deepMarker('array', 5_000),
  [deepMarker('object', 1_000)],
  [{ ...VALID, recipient: 'x\0' }, VALID, null, [], 42],
  [VALID, VALID, { ...VALID, warnings: deepMarker('array', 1_000) }],
].map((json) => ({ ...publishJson(json, 'token+json'), route: BATCH, target: BATCH_PATH }));
const historyExamples: FuzzRequest[] = [`${PATH}?since=%00`, `${PATH}?since=2026-01-01T00:00:00Z&since=2026-01-01T00:00:00Z`, `${PATH}?since[$gt]=0`, `${PATH}?since=2026-01-01T00:00:00Z%00`, `${PATH}?since=%FF`].map((target) => ({
  route: HISTORY,
  kind: 'token',
  method: 'GET',
  target,
  headers: [['Authorization', 'Bearer {{subscribe_token}}']],
}));

describe('fuzz: notification routes', () => {
  const fuzz = fuzzFile('notifications');

  it('answers any publish below 500, in time, storing only what it accepted', () => fuzz.checkRequests(publishRequest, { stores: publishStores, examples: publishExamples }), TEST_TIMEOUT_MS);

  it('answers any batch publish below 500, in time, storing only what it accepted', () => fuzz.checkRequests(batchRequest, { stores: publishStores, examples: batchExamples }), TEST_TIMEOUT_MS);

  it('answers any history request below 500, in time, storing nothing', () => fuzz.checkRequests(historyRequest, { stores: () => [], examples: historyExamples }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies on both routes', () => fuzz.checkRequests(envelopes, { stores: publishStores, examples: [...envelopeExamples(PUBLISH, PUBLISH_TEMPLATE), ...envelopeExamples(HISTORY, HISTORY_TEMPLATE)] }), TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
