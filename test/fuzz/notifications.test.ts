import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { query } from '../setup/database.js';
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
import { FUZZ_RUNS, fuzzFile, type FuzzSession, type StoreRule, TEST_TIMEOUT_MS } from './support/fuzz.js';
import { deepMarker, type FuzzRequest, type HeaderValue } from './support/requests.js';
import type { Outcome } from './support/http.js';

/** The notification routes (publish, history) under generated input. */

const PATH = '/voyage/notification/v1/notifications';
const PUBLISH = `POST ${PATH}`;
const BATCH_PATH = `${PATH}/batch`;
const BATCH = `POST ${BATCH_PATH}`;
const HISTORY = `GET ${PATH}`;

/** The notification's fields plus recipient; `{{uuid}}` is a fresh UUID per request, so a valid body is a new notification. */
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
const after = fc.oneof(
  fieldValue('0', '1', '9223372036854775807'),
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String),
  fc.constantFrom('9223372036854775808', '-0', '1e3', '0x10', '+1', '1.0', '00000000000000000001', '1'.repeat(40)),
);
const historyAuth: fc.Arbitrary<HeaderValue | null> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('Bearer {{subscribe_token}}') },
  { weight: 3, arbitrary: authorization({ bearer: ['{{subscribe_token}}', '{{publish_token}}', '{{forged_subscribe_token}}'], basic: [['{{cc_client_id}}', '{{cc_client_secret}}']] }) },
  { weight: 1, arbitrary: fc.constant(null) },
);
const historyRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(fc.option(fc.oneof(queryOf({ since, after }, [['since', '2026-01-01T00:00:00Z']]), queryOf({ since, after }, [['after', '0']])), { freq: 8 }), historyAuth)
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
const historyExamples: FuzzRequest[] = [
  `${PATH}?since=%00`,
  `${PATH}?since=2026-01-01T00:00:00Z&since=2026-01-01T00:00:00Z`,
  `${PATH}?since[$gt]=0`,
  `${PATH}?since=2026-01-01T00:00:00Z%00`,
  `${PATH}?since=%FF`,
  `${PATH}?after=0&after=1`,
  `${PATH}?after[$gt]=0`,
  `${PATH}?after=99999999999999999999999999999`,
  `${PATH}?after=0&since=2026-01-01T00:00:00Z`,
].map((target) => ({
  route: HISTORY,
  kind: 'token',
  method: 'GET',
  target,
  headers: [['Authorization', 'Bearer {{subscribe_token}}']],
}));

/**
 * Truthful answers: bodies with what PostgreSQL might store otherwise than it was sent (UUIDs in
 * any letter case, lone surrogates) and repeats of one notification in another spelling.
 * `UuidSlot`s become one of three UUIDs fresh for each run, so elements of one batch share them.
 */
class UuidSlot {
  constructor(
    readonly slot: number,
    readonly letters: 'lower' | 'upper' | 'mixed',
  ) {}
}
const uuidSlot = fc.tuple(fc.nat(2), fc.constantFrom('lower' as const, 'upper' as const, 'mixed' as const)).map(([slot, letters]) => new UuidSlot(slot, letters));
const loneSurrogate = fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\ud83d');
/** Mostly a usual value; sometimes with a lone surrogate, a whole pair, other letter case or any text. */
const spelled = (...usual: string[]) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...usual) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...usual), loneSurrogate, fc.boolean()).map(([text, half, before]) => (before ? half + text : text + half)) },
    { weight: 1, arbitrary: fc.constantFrom(...usual).map((text) => `${text.toUpperCase()} \ud83d\ude00`) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  );
const spelledUuid = fc.oneof({ weight: 8, arbitrary: uuidSlot }, { weight: 1, arbitrary: fc.constantFrom('not-a-uuid', `${'A'.repeat(8)}-AAAA-AAAA-AAAA-${'A'.repeat(11)}`) });
const spelledBody: fc.Arbitrary<Record<string, unknown>> = fc.record({
  recipient: fc.oneof({ weight: 8, arbitrary: fc.constant('{{recipient}}') }, { weight: 1, arbitrary: fc.constantFrom('{{recipient}}\ud800', '\udc00{{recipient}}', 'unknown-client') }),
  correlationId: spelledUuid,
  productName: spelled('RouteAdvice'),
  origin: spelled('RouteConfigurationService'),
  status: spelled('New', 'Done', 'Geändert'),
  statusTimestamp: fc.constant('2026-11-21T08:30:00.123Z'),
  deliverables: fc.array(fc.record({ productType: spelled('pdf', 'rtz') }), { maxLength: 2 }),
  customerReferenceId: spelled('CUST-REF-42'),
  routeCalculationScheduleId: spelledUuid,
  warnings: fc.array(spelled('Image 3 of the PDF could not be generated', 'two\nlines'), { maxLength: 2 }),
  creationDate: fc.constant('2026-11-21T08:29:59.987Z'),
});

/** A valid body with the run's first two UUIDs; the examples below vary it. */
const USUAL = {
  ...VALID,
  correlationId: new UuidSlot(0, 'lower'),
  routeCalculationScheduleId: new UuidSlot(2, 'lower'),
};

/** The body as sent: slots replaced by this run's UUIDs, in their letter case. */
function spell<T>(value: T, uuids: string[]): T {
  if (value instanceof UuidSlot) {
    const uuid = uuids[value.slot];
    return (value.letters === 'lower' ? uuid : value.letters === 'upper' ? uuid.toUpperCase() : uuid.replace(/[a-f](.)/g, (pair) => pair[0].toUpperCase() + pair[1])) as T;
  }
  if (Array.isArray(value)) return value.map((item) => spell(item, uuids)) as T;
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, spell(item, uuids)])) as T;
  return value;
}

type Sent = Record<string, unknown> & { recipient: string; correlationId: string; status: string; routeCalculationScheduleId: string };
/** What a 202 must have stored for `body`: its key, and the pushed fields with the UUIDs lower case. */
const storedFor = (body: Sent) => {
  const { recipient: _recipient, ...fields } = body;
  return {
    key: [body.recipient, body.correlationId.toLowerCase(), body.status],
    payload: { ...fields, correlationId: body.correlationId.toLowerCase(), routeCalculationScheduleId: body.routeCalculationScheduleId.toLowerCase() },
  };
};

describe('fuzz: notification routes', () => {
  const fuzz: FuzzSession = fuzzFile('notifications');

  it('answers any publish below 500, in time, storing only what it accepted', () => fuzz.checkRequests(publishRequest, { stores: publishStores, examples: publishExamples }), TEST_TIMEOUT_MS);

  it('answers any batch publish below 500, in time, storing only what it accepted', () => fuzz.checkRequests(batchRequest, { stores: publishStores, examples: batchExamples }), TEST_TIMEOUT_MS);

  it('answers any history request below 500, in time, storing nothing', () => fuzz.checkRequests(historyRequest, { stores: () => [], examples: historyExamples }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies on both routes', () => fuzz.checkRequests(envelopes, { stores: publishStores, examples: [...envelopeExamples(PUBLISH, PUBLISH_TEMPLATE), ...envelopeExamples(HISTORY, HISTORY_TEMPLATE)] }), TEST_TIMEOUT_MS);

  /** Posts `json` twice (the second is the caller's retry) and counts the stored notifications before and after. */
  async function postTwice(route: string, target: string, json: unknown) {
    const request: FuzzRequest = { route, kind: 'token+truthful', method: 'POST', target, headers: [['Authorization', 'Bearer {{publish_token}}'], ['Content-Type', JSON_TYPE]], body: { json } };
    const filled = await fuzz.world.fill(request);
    const count = async () => (await fuzz.counts()).notifications;
    const before = await count();
    const answer = async () => {
      const outcome: Outcome = await fuzz.sendFilled(request, filled);
      fuzz.expectAnswered(request, outcome);
      return { status: outcome.status, body: JSON.parse(outcome.body.toString('utf8')) as Record<string, unknown> };
    };
    const first = await answer();
    const retry = await answer();
    return { sent: (filled.body as { json: unknown }).json, first, retry, stored: (await count()) - before };
  }

  /** The stored row of `id`: exactly one, holding what was sent. */
  async function expectStored(id: unknown, body: Sent) {
    const rows = await query<{ recipient: string; correlation_id: string; status: string; payload: string }>(
      fuzz.world.app.databaseUrl,
      'SELECT recipient, correlation_id, status, payload FROM notifications WHERE id = $1',
      [id],
    );
    expect(rows).toHaveLength(1);
    const { key, payload } = storedFor(body);
    expect([rows[0].recipient, rows[0].correlation_id, rows[0].status]).toEqual(key);
    expect(JSON.parse(rows[0].payload)).toEqual(payload);
  }

  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  const freshUuids = () => [randomUUID(), randomUUID(), randomUUID()];

  it('answers a publish truthfully: a 4xx stores nothing, a 202 stores exactly one row with what was sent, and a retry answers the same id', () =>
    fuzz.check(
      spelledBody,
      async (generated) => {
        const { sent, first, retry, stored } = await postTwice(PUBLISH, PATH, spell(generated, freshUuids()));
        if (first.status !== 202) {
          expect(first.status).toBeGreaterThanOrEqual(400);
          expect(stored).toBe(0);
          expect(retry).toEqual(first.status === 400 ? { status: 400, body: { ...first.body, correlationId: expect.any(String) } } : { status: first.status, body: expect.anything() });
          return;
        }
        expect(first.body).toStrictEqual({ id: expect.stringMatching(UUID) });
        expect(stored).toBe(1);
        await expectStored(first.body.id, sent as Sent);
        expect(retry).toStrictEqual({ status: 202, body: { id: first.body.id, duplicate: true } });
      },
      FUZZ_RUNS,
      [
        { ...USUAL, correlationId: new UuidSlot(0, 'upper'), routeCalculationScheduleId: new UuidSlot(1, 'mixed') },
        { ...USUAL, status: 'New\ud800' },
        { ...USUAL, warnings: ['half of \ud83d'] },
      ],
    ),
  TEST_TIMEOUT_MS);

  it('answers a batch truthfully: one row per element answered {id}, the later spellings of one notification its duplicates, nothing for a refused one, and a retry the same ids', () =>
    fuzz.check(
      fc.array(spelledBody, { minLength: 1, maxLength: 6 }),
      async (generated) => {
        const { sent, first, retry, stored } = await postTwice(BATCH, BATCH_PATH, spell(generated, freshUuids()));
        expect(first.status).toBe(202);
        const elements = sent as Sent[];
        const results = first.body.results as Record<string, unknown>[];
        expect(results).toHaveLength(elements.length);
        const firstIds = new Map<string, unknown>();
        for (const [index, result] of results.entries()) {
          if ('status' in result) {
            expect(result).toStrictEqual({ status: 400, errors: expect.arrayContaining([expect.any(String)]) });
            continue;
          }
          const key = storedFor(elements[index]).key.join('\n');
          if (firstIds.has(key)) {
            expect(result).toStrictEqual({ id: firstIds.get(key), duplicate: true });
            continue;
          }
          expect(result).toStrictEqual({ id: expect.stringMatching(UUID) });
          firstIds.set(key, result.id);
          await expectStored(result.id, elements[index]);
        }
        expect(stored).toBe(firstIds.size);
        expect(retry).toStrictEqual({ status: 202, body: { results: results.map((result) => ('id' in result ? { id: result.id, duplicate: true } : result)) } });
      },
      FUZZ_RUNS,
      [
        [
          { ...USUAL, correlationId: new UuidSlot(0, 'upper') },
          { ...USUAL, correlationId: new UuidSlot(1, 'lower') },
          { ...USUAL, correlationId: new UuidSlot(0, 'lower') },
          { ...USUAL, correlationId: new UuidSlot(0, 'mixed'), status: 'New\udc00' },
          { ...USUAL, correlationId: new UuidSlot(0, 'mixed') },
        ],
      ],
    ),
  TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
