import fc from 'fast-check';
import { describe, it } from 'vitest';
import { pollDeviceToken, startDeviceAuthorization, VerificationPage, verifyDevice } from '../factories/device-flow.factory.js';
import { refresh, storedHash, type TokenResponse } from '../factories/token-flow.factory.js';
import { query } from '../setup/database.js';
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
  objectAround,
  paramsAround,
  PAGE_CSRF,
  pageCsrfCookie,
  pageFormPost,
  paramsOf,
  queryOf,
  type RouteTemplate,
  sampleOf,
  withBody,
} from './support/arbitraries.js';
import { type Counts, expectProcessAlive, FUZZ_RUNS, type FuzzSession, fuzzFile, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { Outcome } from './support/http.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';
import { DEVICE_SCOPES } from './support/world.js';

/**
 * The device flow (RFC 8628) under generated input: POST /sso/device_authorization, and the
 * verification page GET and POST /sso/device in its three steps (code, sign-in, decision). The
 * device's polls at /sso/token are fuzzed with the other grants in sso-token.test.ts.
 */

const AUTHORIZE = 'POST /sso/device_authorization';
const PAGE = 'GET /sso/device';
const SUBMIT = 'POST /sso/device';
const CSRF = PAGE_CSRF;
const COOKIE: [string, HeaderValue] = ['Cookie', `vc_csrf=${CSRF}`];
const SCRIPT = '"><script>alert(1)</script>';
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

// ---------------------------------------------------------------------------------------------
// POST /sso/device_authorization
// ---------------------------------------------------------------------------------------------

const DEVICE_BASIC: [string, string][] = [
  ['{{device_client_id}}', '{{device_client_secret}}'],
  ['{{other_device_client_id}}', '{{other_device_client_secret}}'],
  ['{{client_id}}', '{{client_secret}}'],
  ['{{device_client_id}}', '{{other_device_client_secret}}'],
];
const authorizeFields: Fields = {
  client_id: fieldValue('{{device_client_id}}', '{{other_device_client_id}}', '{{client_id}}', '{{cc_client_id}}', '{{disabled_client_id}}'),
  client_secret: fieldValue('{{device_client_secret}}', '{{other_device_client_secret}}', '{{client_secret}}', '{{cc_client_secret}}'),
  scope: fieldValue(...DEVICE_SCOPES, DEVICE_SCOPES.join(' '), `${DEVICE_SCOPES[1]} ${DEVICE_SCOPES[0]} ${DEVICE_SCOPES[1]}`, `${DEVICE_SCOPES[0]} admin`, 'openid', 'a\\b', `${DEVICE_SCOPES[0]}  ${DEVICE_SCOPES[1]}`, ' ', '"'),
};
const POST_AUTH: [string, string][] = [['client_id', '{{device_client_id}}'], ['client_secret', '{{device_client_secret}}']];
const authorizeValid: { pairs: [string, string][]; basic?: true }[] = [
  { pairs: POST_AUTH },
  { pairs: [...POST_AUTH, ['scope', DEVICE_SCOPES.join(' ')]] },
  { pairs: [['client_id', '{{other_device_client_id}}'], ['client_secret', '{{other_device_client_secret}}']] },
  { pairs: [['scope', DEVICE_SCOPES[0]]], basic: true },
  { pairs: [], basic: true },
];

/**
 * A form around a valid request (client_secret_post, or client_secret_basic with the right or a
 * fuzzed Authorization header) or a random one; as a form, JSON, a wrong or missing media type, raw bytes.
 */
const authorizeRequest: fc.Arbitrary<FuzzRequest> = fc.constantFrom(...authorizeValid).chain((base) => {
  const form = fc.oneof({ weight: 3, arbitrary: paramsAround(base.pairs, authorizeFields) }, { weight: 1, arbitrary: paramsOf(authorizeFields) });
  const json = fc.oneof(objectAround(Object.fromEntries(base.pairs), { client_id: jsonFieldValue(), client_secret: jsonFieldValue(), scope: jsonFieldValue() }), fc.jsonValue());
  const body = fc.oneof({ weight: 4, arbitrary: form.map((pairs) => ({ kind: 'form', contentType: FORM, body: { form: pairs } })) }, { weight: 3, arbitrary: confusedBody(form, json) });
  const fuzzedAuth = authorization({ basic: DEVICE_BASIC, bearer: ['{{access_token}}'] });
  const realBasic: HeaderValue = { basic: ['{{device_client_id}}', '{{device_client_secret}}'], encoding: 'form' };
  const auth = base.basic ? fc.oneof({ weight: 3, arbitrary: fc.constant(realBasic) }, { weight: 1, arbitrary: fuzzedAuth }) : fc.option(fuzzedAuth, { freq: 3 });
  return fc.tuple(body, auth).map(([chosen, header]) =>
    withBody({ route: AUTHORIZE, method: 'POST', target: '/sso/device_authorization', headers: header === null ? [] : [['Authorization', header]] }, header === null ? 'post-auth' : 'header-auth', chosen),
  );
});

const long = (unit: 'binary' | 'grapheme-ascii', seed = 1) => sampleOf(fc.string({ unit, minLength: 3_000, maxLength: 3_000 }), seed);
const LONG_BINARY = long('binary');
const LONG_ASCII = long('grapheme-ascii');

/** The pairs with `name`'s value replaced (or appended when absent). */
function replaced(pairs: [string, string][], name: string, value: string): [string, string][] {
  return pairs.some(([field]) => field === name) ? pairs.map(([field, real]): [string, string] => [field, field === name ? value : real]) : [...pairs, [name, value]];
}

/** Shapes tried first: NUL in each field and in Basic credentials, each field repeated, 3,000-character values, JSON, invalid UTF-8. */
const authorizeExamples: FuzzRequest[] = (() => {
  const valid: [string, string][] = [...POST_AUTH, ['scope', DEVICE_SCOPES[0]]];
  const form = (pairs: [string, string][], headers: [string, HeaderValue][] = []): FuzzRequest => ({
    route: AUTHORIZE,
    kind: headers.length ? 'header-auth+form' : 'post-auth+form',
    method: 'POST',
    target: '/sso/device_authorization',
    headers: [['Content-Type', FORM], ...headers],
    body: { form: pairs },
  });
  const names = valid.map(([name]) => name);
  return [
    form(valid),
    ...names.flatMap((name) => [
      form(replaced(valid, name, `${valid.find(([field]) => field === name)![1]}\0`)),
      form(replaced(valid, name, '\0')),
      form([...valid, [name, valid.find(([field]) => field === name)![1]]]),
      form(replaced(valid, name, LONG_BINARY)),
      form(replaced(valid, name, LONG_ASCII)),
    ]),
    form([['scope', DEVICE_SCOPES[0]]], [['Authorization', { basic: ['{{device_client_id}}\0', '{{device_client_secret}}'], encoding: 'raw' }]]),
    form([['scope', DEVICE_SCOPES[0]]], [['Authorization', { basic: ['{{device_client_id}}', '{{device_client_secret}}\0'], encoding: 'form' }]]),
    form([['scope', DEVICE_SCOPES[0]]], [['Authorization', `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0x00]).toString('base64')}`]]),
    form([['scope', DEVICE_SCOPES[0]]], [['Authorization', { basic: [LONG_ASCII, LONG_ASCII], encoding: 'form' }]]),
    form([...valid], [['Authorization', '{{device_basic}}']]),
    { ...form(valid), kind: 'post-auth+json', headers: [['Content-Type', JSON_TYPE]], body: { json: Object.fromEntries(valid) } },
    { ...form(valid), kind: 'post-auth+json', headers: [['Content-Type', JSON_TYPE]], body: { json: Object.fromEntries(valid.map(([name]) => [name, { $ne: null }])) } },
    { ...form(valid), kind: 'post-auth+json', headers: [['Content-Type', JSON_TYPE]], body: { json: [Object.fromEntries(valid)] } },
    { ...form(valid), kind: 'post-auth+invalid-utf8', body: { bytes: Buffer.from('client_id=%FF%FE&client_secret=\xff&scope=\xc0\xaf', 'latin1') } },
    { ...form(valid), kind: 'post-auth+missing-media-type', headers: [] },
  ];
})();

// ---------------------------------------------------------------------------------------------
// GET /sso/device
// ---------------------------------------------------------------------------------------------

/** A real user code as shown or as a user might type it, one already decided, made-up ones, markup. */
const USER_CODES = ['{{user_code}}', '{{user_code_lower}}', '{{user_code_bare}}', '{{user_code_spaced}}', '{{user_code_dashes}}', '{{user_code_odd_dash}}', '{{decided_user_code}}', 'BCDF-GHJK', 'AAAA-AAAA', 'bcdf ghjk', SCRIPT];
const userCode = fc.oneof({ weight: 4, arbitrary: fieldValue(...USER_CODES) }, { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'BCDFGHJKLMNPQRSTVWXZbcdf- \t'), minLength: 7, maxLength: 12 }) });


const pageRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(fc.option(queryOf({ user_code: userCode }, [['user_code', '{{user_code}}']]), { freq: 6 }), pageCsrfCookie)
  .map(([search, cookie]) => ({
    route: PAGE,
    kind: search === null ? 'no-query' : 'query',
    method: 'GET',
    target: search === null ? '/sso/device' : `/sso/device?${search}`,
    headers: cookie === null ? [] : [['Cookie', cookie]],
  }));

const pageExamples: FuzzRequest[] = [
  '/sso/device',
  '/sso/device?user_code={{user_code}}',
  '/sso/device?user_code=%00',
  '/sso/device?user_code={{user_code}}%00',
  '/sso/device?user_code=BCDF%00GHJK',
  '/sso/device?user_code={{user_code}}&user_code={{user_code}}',
  '/sso/device?user_code={{user_code}}&user_code=BCDF-GHJK',
  `/sso/device?user_code=${'A'.repeat(3_000)}`,
  `/sso/device?user_code=${encodeURIComponent(LONG_BINARY)}`,
  '/sso/device?user_code={{user_code_lower}}',
  '/sso/device?user_code=%20{{user_code_bare}}%20',
  `/sso/device?user_code=${encodeURIComponent(SCRIPT)}`,
  '/sso/device?user_code=%FF',
  '/sso/device?user_code[a]=b',
  '/sso/device?user_code=%E2%80%AE{{user_code}}',
].map((target): FuzzRequest => ({ route: PAGE, kind: 'query', method: 'GET', target, headers: [COOKIE] })).concat(
  // The CSRF cookie is reused for the next form when present: hostile ones are echoed in the page and Set-Cookie.
  ['vc_csrf=%00', 'vc_csrf=%0D%0ASet-Cookie:%20x=y', 'vc_csrf=%E0%A4%A', 'vc_csrf=%ED%A0%80', `vc_csrf=${'a'.repeat(4_000)}`, 'vc_csrf="x"', `vc_csrf=${encodeURIComponent(SCRIPT)}`, 'vc_csrf=', 'vc_csrf=a; vc_csrf=b'].map(
    (cookie): FuzzRequest => ({ route: PAGE, kind: 'cookie', method: 'GET', target: '/sso/device?user_code={{user_code}}', headers: [['Cookie', cookie]] }),
  ),
);

// ---------------------------------------------------------------------------------------------
// POST /sso/device: code, sign-in, decision
// ---------------------------------------------------------------------------------------------

const submitFields: Fields = {
  csrf_token: fieldValue(CSRF, 'other'),
  user_code: userCode,
  username: fieldValue('{{username}}', '{{username_upper}}', 'nobody', SCRIPT),
  password: fieldValue('{{password}}', 'wrong password'),
  approval: fieldValue('{{approval}}', 'forged'),
  decision: fieldValue('approve', 'deny', 'maybe', 'Approve', 'approve '),
};
const CODE_STEP: [string, string][] = [['csrf_token', CSRF], ['user_code', '{{user_code}}']];
const signInStep = (password: string): [string, string][] => [...CODE_STEP, ['username', '{{username}}'], ['password', password]];
const decisionStep = (decision: string): [string, string][] => [...CODE_STEP, ['approval', '{{approval}}'], ['decision', decision]];
const STEPS: [string, string][][] = [CODE_STEP, signInStep('{{password}}'), signInStep('wrong password'), decisionStep('approve'), decisionStep('deny')];

const submitRequest: fc.Arbitrary<FuzzRequest> = pageFormPost(
  SUBMIT,
  fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...STEPS).chain((step) => paramsAround(step, submitFields)) }, { weight: 1, arbitrary: paramsOf(submitFields) }),
  submitFields,
);

/** Well-formed steps with the right CSRF token and cookie, around the valid ones: what reaches the slow-down of wrong codes. */
const wellFormedStep: fc.Arbitrary<FuzzRequest> = fc
  .constantFrom(...STEPS)
  .chain((step) => paramsAround(step, { ...submitFields, csrf_token: fc.constant(CSRF) }))
  .map((pairs) => withBody({ route: SUBMIT, method: 'POST', target: '/sso/device', headers: [COOKIE] }, 'form', { kind: 'fields', contentType: FORM, body: { form: pairs } }));

const submit = (pairs: [string, string][], cookie: string | null = `vc_csrf=${CSRF}`): FuzzRequest => ({
  route: SUBMIT,
  kind: 'form+fields',
  method: 'POST',
  target: '/sso/device',
  headers: [...(cookie === null ? [] : ([['Cookie', cookie]] as [string, HeaderValue][])), ['Content-Type', FORM]],
  body: { form: pairs },
});
const asJson = (pairs: [string, string][]): FuzzRequest => ({ ...submit(pairs), kind: 'form+json', headers: [COOKIE, ['Content-Type', JSON_TYPE]], body: { json: Object.fromEntries(pairs) } });

/**
 * Shapes tried first, on each step: NUL in each field, each field repeated, 3,000-character
 * values, JSON instead of a form; the real code in lower case, with a space or without the dash;
 * the real code, sign-in or decision with a wrong, missing or doubled CSRF token.
 */
const submitExamples: FuzzRequest[] = [
  ...[CODE_STEP, signInStep('wrong password'), decisionStep('approve')].flatMap((step): FuzzRequest[] => [
    submit(step),
    ...step.flatMap(([name, real]) => [
      submit(replaced(step, name, `${real}\0`)),
      submit(replaced(step, name, '\0')),
      submit([...step, [name, real]]),
      submit([...step, [name, 'x']]),
      submit(replaced(step, name, LONG_BINARY)),
      submit(replaced(step, name, LONG_ASCII)),
    ]),
    asJson(step),
    { ...asJson(step), body: { json: Object.fromEntries(step.map(([name]) => [name, { $ne: null }])) } },
    { ...asJson(step), body: { json: Object.fromEntries(step.map(([name, value]) => [name, [value]])) } },
    { ...submit(step), kind: 'form+text', headers: [COOKIE, ['Content-Type', 'text/plain'] as [string, HeaderValue]], body: { text: new URLSearchParams(step).toString() } },
    { ...submit(step), kind: 'form+missing-media-type', headers: [COOKIE] },
    // The real value with a wrong, missing, doubled or other CSRF token.
    submit(replaced(step, 'csrf_token', 'wrong')),
    submit(replaced(step, 'csrf_token', `${CSRF}x`)),
    submit(step.filter(([name]) => name !== 'csrf_token')),
    submit(step, null),
    submit(step, 'vc_csrf=other'),
    submit(step, `vc_csrf=other; vc_csrf=${CSRF}`),
    submit(step, `vc_csrf=${CSRF}; vc_csrf=other`),
    submit(step, `__Host-vc_csrf=${CSRF}`),
    submit(step, `vc_csrf=${CSRF}\0`),
  ]),
  ...['{{user_code_lower}}', '{{user_code_bare}}', '{{user_code_spaced}}', '{{user_code_dashes}}', '{{user_code_odd_dash}}', '{{user_code}}\t', ' {{user_code_lower}} '].flatMap((typed) => [
    submit(replaced(CODE_STEP, 'user_code', typed)),
    submit(replaced(signInStep('{{password}}'), 'user_code', typed)),
    submit(replaced(decisionStep('deny'), 'user_code', typed)),
    submit(replaced(CODE_STEP, 'user_code', typed), null),
  ]),
  submit(replaced(CODE_STEP, 'user_code', '{{decided_user_code}}')),
  submit(replaced(signInStep('{{password}}'), 'user_code', '{{decided_user_code}}')),
  submit(replaced(CODE_STEP, 'user_code', 'x'.repeat(65))),
  submit(replaced(CODE_STEP, 'user_code', SCRIPT)),
  submit(replaced(signInStep('wrong password'), 'username', SCRIPT)),
  submit(replaced(signInStep('{{password}}'), 'username', '{{username_upper}}')),
  submit(replaced(decisionStep('approve'), 'approval', 'forged')),
  submit(replaced(decisionStep('approve'), 'decision', 'maybe')),
  submit(decisionStep('approve').filter(([name]) => name !== 'approval')),
  submit([...signInStep('{{password}}'), ['decision', 'approve']]),
  submit([...decisionStep('approve'), ['username', '{{username}}'], ['password', 'wrong password']]),
  submit([]),
  ...['vc_csrf=%00', 'vc_csrf=%0D%0ASet-Cookie:%20x=y', `vc_csrf=${'a'.repeat(4_000)}`, 'vc_csrf='].map((cookie) => submit(replaced(CODE_STEP, 'csrf_token', decodeURIComponent(cookie.slice('vc_csrf='.length))), cookie)),
  { ...submit([]), body: { bytes: Buffer.from(`csrf_token=${CSRF}&user_code=%FF%FE&username=\xff`, 'latin1') }, kind: 'form+invalid-utf8' },
];

// ---------------------------------------------------------------------------------------------
// The envelope
// ---------------------------------------------------------------------------------------------

const TEMPLATES: Record<string, RouteTemplate> = {
  [AUTHORIZE]: { method: 'POST', target: '/sso/device_authorization', body: { contentType: FORM, body: { form: POST_AUTH } } },
  [PAGE]: { method: 'GET', target: '/sso/device?user_code={{user_code}}', headers: [COOKIE] },
  [SUBMIT]: { method: 'POST', target: '/sso/device', headers: [COOKIE], body: { contentType: FORM, body: { form: CODE_STEP } } },
};
const envelopes = fc.oneof(...Object.entries(TEMPLATES).map(([route, template]) => envelope(route, template)));
const envelopeCases = Object.entries(TEMPLATES).flatMap(([route, template]) => envelopeExamples(route, template));

// ---------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------

type Answer = Extract<Outcome, { kind: 'response' }>;
const AUTHORIZE_ERRORS = new Set(['invalid_client', 'unauthorized_client', 'invalid_scope', 'invalid_request', 'temporarily_unavailable']);

function json(outcome: Answer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(outcome.body.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The fields of a filled body, as the page reads them (only string values count). */
function bodyFields(request: FuzzRequest): [string, unknown][] {
  const body = request.body;
  if (body && 'form' in body) return body.form;
  if (body && 'json' in body && body.json !== null && typeof body.json === 'object' && !Array.isArray(body.json)) return Object.entries(body.json);
  return [];
}

/** What each vc_csrf cookie in a Cookie header may be read as: as sent, without quotes, percent-decoded. */
function csrfCookies(header: string): string[] {
  return header.split(';').flatMap((pair) => {
    const at = pair.indexOf('=');
    if (at < 0 || pair.slice(0, at).trim() !== 'vc_csrf') return [];
    const raw = pair.slice(at + 1).trim();
    return [raw, raw.replace(/^"(.*)"$/s, '$1')].flatMap((value) => {
      try {
        return [value, decodeURIComponent(value)];
      } catch {
        return [value];
      }
    });
  });
}

/**
 * What each answer of the device flow's routes must be, beyond "below 500 and in time":
 * a device authorization answered 200 stored exactly one device_codes row and has RFC 8628 §3.2's
 * shape; any other answer, and every answer of the verification page, stored no row (a sign-in
 * or a decision only updates its device_codes row); an error of /sso/device_authorization that
 * reached the router is RFC 6749 §5.2 JSON; a step of the page accepted (200) had a CSRF token
 * matching its cookie; no page carries a script.
 */
function judge(fuzz: FuzzSession, request: FuzzRequest, filled: FuzzRequest, outcome: Answer, before: Counts, after: Counts): void {
  const fail = (why: string) => {
    throw new Error(`${request.route} [${request.kind}] answered ${outcome.status}: ${why}; body: ${outcome.body.subarray(0, 300).toString('utf8')}`);
  };
  const started = request.route === AUTHORIZE && outcome.status === 200;
  fuzz.expectStoredOnly(before, after, started ? ['device_codes'] : [], request, outcome);
  if (started) {
    if (after.device_codes !== before.device_codes + 1) fail(`device_codes went ${before.device_codes} → ${after.device_codes}, not one more`);
    const body = json(outcome);
    const keys = Object.keys(body ?? {}).sort().join(',');
    if (keys !== 'device_code,expires_in,interval,user_code,verification_uri,verification_uri_complete') fail(`the fields are ${keys}`);
    if (!USER_CODE.test(String(body!.user_code))) fail(`user_code ${body!.user_code}`);
    if (body!.verification_uri !== `${fuzz.world.app.baseUrl}/sso/device`) fail(`verification_uri ${body!.verification_uri}`);
    if (outcome.headers['cache-control'] !== 'no-store') fail(`Cache-Control: ${outcome.headers['cache-control']}`);
  }
  // The RFC 6749 error format, for what reached the router at the exact path (Node's own 400s before routing carry no request id).
  if (request.route === AUTHORIZE && filled.method !== 'HEAD' && filled.target === '/sso/device_authorization' && outcome.status >= 400 && outcome.headers['x-request-id']) {
    const body = json(outcome);
    if (!body || typeof body.error !== 'string' || !AUTHORIZE_ERRORS.has(body.error)) fail('not an RFC 6749 §5.2 error of this endpoint');
    if ((body!.error === 'invalid_client') !== (outcome.status === 401)) fail(`${body!.error} with ${outcome.status}`);
  }
  if (request.route !== AUTHORIZE && /^text\/html/.test(outcome.headers['content-type'] ?? '') && /<script/i.test(outcome.body.toString('utf8'))) fail('the page carries a script');
  if (request.route === SUBMIT && request.method === 'POST' && outcome.status === 200 && /^text\/html/.test(outcome.headers['content-type'] ?? '')) {
    const token = bodyFields(filled).find(([name]) => name === 'csrf_token')?.[1];
    const cookie = filled.headers?.find(([name]) => name.toLowerCase() === 'cookie')?.[1];
    if (typeof token !== 'string' || token === '' || typeof cookie !== 'string' || !csrfCookies(cookie).includes(token)) fail(`accepted a step whose CSRF token ${JSON.stringify(token)} is not its cookie's (${JSON.stringify(cookie)})`);
  }
}

/**
 * checkRequests with the device flow's store rules and answers (see judge). `beforeSend` runs
 * after the placeholders are filled (filling `{{approval}}` signs in, which resets the slow-downs).
 */
function checkDevice(
  fuzz: FuzzSession,
  arbitrary: fc.Arbitrary<FuzzRequest>,
  options: { beforeEach?: () => Promise<unknown>; beforeSend?: () => Promise<unknown>; examples?: FuzzRequest[]; runs?: number } = {},
) {
  return fuzz.check(
    arbitrary,
    async (request) => {
      await options.beforeEach?.();
      const filled = await fuzz.world.fill(request);
      await options.beforeSend?.();
      const before = await fuzz.counts();
      const outcome = await fuzz.sendFilled(request, filled);
      fuzz.expectAnswered(request, outcome);
      const after = await fuzz.counts();
      judge(fuzz, request, filled, outcome, before, after);
      expectProcessAlive();
    },
    options.runs,
    options.examples,
  );
}

describe('fuzz: device flow (RFC 8628)', () => {
  const fuzz = fuzzFile('device-flow');
  /** Wrong codes and failed sign-ins are slowed down per address (all of ours come from 127.0.0.1): each request starts unthrottled. */
  const unthrottled = () => fuzz.world.resetLoginThrottle();
  /** This address past the slow-down of wrong codes: 10 wrong ones, then blocked for an hour. */
  const throttled = async () => {
    await fuzz.world.resetLoginThrottle();
    const page = await VerificationPage.open(fuzz.world.app);
    for (let i = 0; i < 10; i++) {
      await page.submit({ user_code: 'BCDF-GHJK' });
      if (page.status !== 400) throw new Error(`wrong code ${i + 1} answered ${page.status}`);
    }
    const blocked = await query(fuzz.world.app.databaseUrl, `UPDATE login_failures SET blocked_until = now() + interval '1 hour' WHERE key LIKE 'user_code:%' RETURNING key`);
    if (blocked.length !== 1) throw new Error(`${blocked.length} user-code slow-down rows`);
  };

  it('answers any device authorization request below 500, in time, storing one device code only when it answers one', () => checkDevice(fuzz, authorizeRequest, { examples: authorizeExamples }), TEST_TIMEOUT_MS);

  it('answers any verification page link below 500, in time, storing nothing', () => checkDevice(fuzz, pageRequest, { examples: pageExamples }), TEST_TIMEOUT_MS);

  it('answers any step of the verification page below 500, in time, storing nothing', () => checkDevice(fuzz, submitRequest, { beforeEach: unthrottled, examples: submitExamples }), TEST_TIMEOUT_MS);

  it('answers any step below 500 while the address is slowed down for wrong codes, storing nothing', async () => {
    const blocked = await (async () => {
      await throttled();
      return (await (await VerificationPage.open(fuzz.world.app)).submit({ user_code: (await startDeviceAuthorization(fuzz.world.app, fuzz.world.device)).user_code })).status;
    })();
    if (blocked !== 429) throw new Error(`a right code from a slowed-down address answered ${blocked}`);
    const examples = [CODE_STEP, signInStep('{{password}}'), decisionStep('approve'), replaced(CODE_STEP, 'user_code', '{{user_code_lower}}')].map((step) => submit(step));
    await checkDevice(fuzz, fc.oneof(wellFormedStep, submitRequest), { beforeSend: throttled, runs: Math.ceil(FUZZ_RUNS / 2), examples });
  }, TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies on the device flow routes', () => checkDevice(fuzz, envelopes, { beforeEach: unthrottled, examples: envelopeCases }), TEST_TIMEOUT_MS);

  it('still serves the normal flows and the device flow afterwards, and the process never saw an uncaught error', async () => {
    await fuzz.expectServiceStillWorks();
    const { app, device, user } = fuzz.world;
    await fuzz.world.resetLoginThrottle();
    const started = await startDeviceAuthorization(app, device, { scope: DEVICE_SCOPES.join(' ') });
    const pending = await pollDeviceToken(app, device, started.device_code);
    if ((pending.body as { error?: string }).error !== 'authorization_pending') throw new Error(`the first poll answered ${pending.status}: ${pending.text}`);
    const done = await verifyDevice(app, started.user_code, user, 'approve');
    if (done.status !== 200 || !done.html.includes('Device connected')) throw new Error(`the approval answered ${done.status}: ${done.error}`);
    // As if the device waited its interval before polling again.
    await query(app.databaseUrl, 'UPDATE device_codes SET last_polled_at = NULL WHERE device_code_hash = $1', [storedHash(started.device_code)]);
    const tokens = await pollDeviceToken(app, device, started.device_code);
    if (tokens.status !== 200) throw new Error(`the poll after the approval answered ${tokens.status}: ${tokens.text}`);
    const refreshed = await refresh(app, device, (tokens.body as unknown as TokenResponse).refresh_token);
    if (refreshed.status !== 200) throw new Error(`refresh answered ${refreshed.status}: ${refreshed.text}`);
    expectProcessAlive();
  }, 60_000);
});
