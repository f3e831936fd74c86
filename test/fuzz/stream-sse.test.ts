import type { Socket } from 'node:net';
import { constants as zlib, gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { authorization, fieldValue, headerText, oddHeaders, oddMethod, pathTrick, queryOf } from './support/arbitraries.js';
import { expectProcessAlive, type FuzzSession, fuzzFile, TEST_TIMEOUT_MS } from './support/fuzz.js';
import { dechunk, type Outcome } from './support/http.js';
import { type PublishPlan, type Recipient, Recipients } from './support/recipients.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';

/**
 * The notification stream as server-sent events: its one request, with any Last-Event-ID (huge,
 * negative, Unicode digits, NUL, repeated), any `after` and `epoch`, any Accept and
 * Accept-Encoding, odd methods, path tricks and odd headers. Each run has a client of its own
 * (support/recipients.ts); a 200 is read as an EventSource would read it, and every run ends
 * with a new plain connection of that client, which must get again everything the request could
 * not have confirmed.
 */

const PATH = '/voyage/notification/v1/sse/products';
const ROUTE = `GET ${PATH}`;
/** How long a 200's stream gets to send what it must. */
const WAIT_MS = 3_000;

/** Header values as generated may hold CR or LF, which would frame another request. */
const oneLine = (value: fc.Arbitrary<string>) => value.map((text) => text.replace(/[\r\n]/g, ''));

const SEQ_PLACEHOLDERS = ['{{r_first}}', '{{r_last}}', '{{r_beyond}}', '{{r_neighbour_below}}', '{{r_neighbour_above}}'];

/** A position as a client might send it, or as no client should: the run's own seqs, another client's, none's, and garbage. */
const position = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...SEQ_PLACEHOLDERS) },
  { weight: 2, arbitrary: oneLine(fieldValue(...SEQ_PLACEHOLDERS)) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '0',
      '00',
      '-1',
      '-0',
      '1.5',
      '+1',
      '1e3',
      '0x10',
      '\uff19',
      '\u0663',
      '9'.repeat(16),
      '9'.repeat(30),
      '9007199254740991',
      '9007199254740992',
      '',
      ' ',
      '\u0000',
      '{{r_last}}\u0000',
      '{{r_last}},{{r_beyond}}',
      '-{{r_last}}',
      '{{r_last}}.0',
    ),
  },
  { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 16_000 }).map((length) => '9'.repeat(length)) },
);
const epoch = fc.oneof(
  { weight: 4, arbitrary: oneLine(fieldValue('{{r_epoch}}')) },
  { weight: 2, arbitrary: fc.constantFrom('a'.repeat(32), '0'.repeat(32), 'x', '-', 'a'.repeat(64), 'a'.repeat(65), 'no spaces', '', 'é') },
);

/** `arbitrary` in one run out of `oneIn`, null otherwise. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, oneIn: number): fc.Arbitrary<T | null> => fc.oneof({ weight: oneIn - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary });

/** Absent (null), the usual value, or something else. */
function optional(usual: string, others: fc.Arbitrary<string>, weights = { absent: 3, usual: 4, other: 3 }): fc.Arbitrary<string | null> {
  return fc.oneof(
    { weight: weights.absent, arbitrary: fc.constant(null) },
    { weight: weights.usual, arbitrary: fc.constant(usual) },
    { weight: weights.other, arbitrary: others },
  );
}

const accept = optional(
  'text/event-stream',
  fc.oneof(
    fc.constantFrom('*/*', 'text/*', 'text/event-stream; charset=utf-8', 'application/json', 'text/html', 'text/event-stream;q=0', 'text/event-stream;q=0, */*;q=0.1', 'TEXT/EVENT-STREAM', 'text/event-stream, application/json', ''),
    headerText,
  ),
  { absent: 3, usual: 5, other: 2 },
);
const acceptEncoding = optional('gzip', fc.oneof(fc.constantFrom('gzip;q=0', 'br', 'deflate', 'identity;q=0', '*', '*;q=0', 'gzip, deflate, br', 'x-gzip', 'GZIP', ''), headerText), { absent: 4, usual: 3, other: 3 });

const sseRequest = fc
  .record({
    before: fc.array(fc.constantFrom<'mine' | 'neighbour'>('mine', 'mine', 'neighbour'), { maxLength: 5 }),
    method: fc.oneof({ weight: 10, arbitrary: fc.constant('GET') }, { weight: 1, arbitrary: oddMethod }),
    path: fc.oneof({ weight: 12, arbitrary: fc.constant<string | Uint8Array>(PATH) }, { weight: 1, arbitrary: pathTrick(PATH) }),
    query: sometimes(queryOf({ after: position, epoch }, [['after', '{{r_last}}'], ['epoch', '{{r_epoch}}']]), 4),
    authorization: fc.oneof(
      { weight: 10, arbitrary: fc.constant<HeaderValue | null>('Bearer {{r_token}}') },
      { weight: 1, arbitrary: authorization({ bearer: ['{{r_token}}', '{{r_publish_token}}', '{{r_forged_token}}'] }) },
      { weight: 1, arbitrary: fc.constant(null) },
    ),
    lastEventIds: fc.oneof({ weight: 3, arbitrary: fc.constant([] as string[]) }, { weight: 6, arbitrary: position.map((id) => [id]) }, { weight: 1, arbitrary: fc.array(position, { minLength: 2, maxLength: 3 }) }),
    accept,
    acceptEncoding,
    extra: sometimes(oddHeaders, 8),
  })
  .map(({ before, method, path, query, authorization: auth, lastEventIds, accept: acceptValue, acceptEncoding: encoding, extra }) => {
    const headers: [string, HeaderValue][] = [];
    if (auth !== null) headers.push(['Authorization', auth]);
    if (acceptValue !== null) headers.push(['Accept', acceptValue]);
    if (encoding !== null) headers.push(['Accept-Encoding', encoding]);
    for (const id of lastEventIds) headers.push(['Last-Event-ID', id]);
    const kinds = [
      method !== 'GET' && 'method',
      path !== PATH && 'path-trick',
      query !== null && 'query',
      lastEventIds.length > 1 ? 'last-event-ids' : lastEventIds.length === 1 && 'last-event-id',
      auth !== 'Bearer {{r_token}}' && 'authorization',
      acceptValue !== 'text/event-stream' && acceptValue !== null && 'accept',
      encoding !== null && encoding !== 'gzip' && 'accept-encoding',
      extra && `header:${extra.label}`,
    ].filter(Boolean);
    const target = typeof path === 'string' && query !== null ? `${path}?${query}` : path;
    let request: FuzzRequest = { route: ROUTE, kind: kinds.join('+') || 'plain', method, target, headers };
    if (extra?.label.startsWith('version')) request = { ...request, httpVersion: extra.label.slice('version '.length) };
    else if (extra) {
      const replaced = new Set(extra.headers.map(([name]) => name.toLowerCase()));
      request = {
        ...request,
        headers: [...headers.filter(([name]) => !replaced.has(name.toLowerCase())), ...extra.headers],
        body: extra.framing || extra.label.startsWith('content-length') ? { text: 'abcdefgh' } : undefined,
        framing: extra.framing,
      };
    }
    return { before: before as PublishPlan, request };
  });

/** What a client sends to resume: every Last-Event-ID header and `after` parameter, as the service received them. */
function positionsOf(request: FuzzRequest): string[] {
  const headers = (request.headers ?? []).filter(([name]) => name.toLowerCase() === 'last-event-id').map(([, value]) => String(value));
  const target = typeof request.target === 'string' ? request.target : Buffer.from(request.target).toString('latin1');
  let afters: string[] = [];
  try {
    afters = new URL(target, 'http://localhost').searchParams.getAll('after');
  } catch {
    // Not a URL the service could route either.
  }
  return [...headers, ...afters];
}

// ---------------------------------------------------------------------------------------------
// Reading an event stream
// ---------------------------------------------------------------------------------------------

interface SseEvent {
  /** A comment line's text, or the event's type (`message` when it names none). */
  comment?: string;
  event?: string;
  id?: string;
  data?: string;
}

/** The stream's body so far as text: chunked coding undone, gzip inflated up to its last flush. */
function bodyText(headers: Record<string, string>, bytes: Buffer): string {
  let body = /chunked/i.test(headers['transfer-encoding'] ?? '') ? dechunk(bytes).body : bytes;
  if (/gzip/i.test(headers['content-encoding'] ?? '') && body.length > 0) body = gunzipSync(body, { finishFlush: zlib.Z_SYNC_FLUSH });
  return body.toString('utf8');
}

/** The complete events of `text` (HTML §9.2.6): blocks ended by a blank line; comments kept apart. */
function parseEvents(text: string): SseEvent[] {
  const blocks = text.split('\n\n');
  blocks.pop(); // not ended yet
  return blocks.map((block) => {
    const event: SseEvent = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) event.comment = line.slice(1).trim();
      else {
        const colon = line.indexOf(':');
        const [field, value] = colon < 0 ? [line, ''] : [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')];
        if (field === 'event' || field === 'id' || field === 'data') event[field] = value;
        else throw new Error(`the stream sent a line of no event field: ${JSON.stringify(line.slice(0, 100))}`);
      }
    }
    return event;
  });
}

/**
 * Reads a 200's stream until it sent every notification of the client it must (or WAIT_MS
 * passed), checking each event on the way; returns whether it began with `reset: epoch` (then
 * it confirmed nothing) and what it sent.
 */
async function readStream(outcome: Extract<Outcome, { kind: 'response' }>, recipient: Recipient, skippable: (reset: boolean) => number): Promise<{ epochReset: boolean; correlationIds: string[] }> {
  const socket = outcome.socket as Socket;
  let bytes = outcome.rest ?? Buffer.alloc(0);
  let ended = false;
  socket.on('data', (data: Buffer) => (bytes = Buffer.concat([bytes, data])));
  socket.on('close', () => (ended = true));
  socket.on('error', () => (ended = true));
  const seqOf = new Map(recipient.published.map((item) => [item.correlationId, item.seq]));
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const events = parseEvents(bodyText(outcome.headers, bytes));
    const [first] = events;
    if (first && first.event !== 'reset' && first.comment !== 'stream open') throw new Error(`the stream began with ${JSON.stringify(first)}, not "reset" or ": stream open"`);
    let epochReset = false;
    let lastSeq = 0;
    const correlationIds: string[] = [];
    for (const [index, event] of events.entries()) {
      if (event.comment !== undefined) continue;
      if (event.event === 'reset') {
        if (index !== 0) throw new Error('a reset came after the stream began');
        const reason = (JSON.parse(event.data ?? '') as { reason?: unknown }).reason;
        if (reason !== 'epoch' && reason !== 'retention') throw new Error(`a reset said ${event.data}`);
        epochReset = reason === 'epoch';
      } else if (event.event === 'notification') {
        const seq = Number(event.id);
        const correlationId = String((JSON.parse(event.data ?? '') as { correlationId?: unknown }).correlationId);
        if (seqOf.get(correlationId) !== seq || !/^[1-9][0-9]*$/.test(event.id ?? '')) throw new Error(`the stream sent id ${event.id} (${correlationId}), which is not this client's notification of that seq`);
        if (seq <= lastSeq) throw new Error(`the stream sent id ${seq} after ${lastSeq}`);
        lastSeq = seq;
        correlationIds.push(correlationId);
      } else if (event.event !== 'token-expired' && event.event !== 'shutdown') {
        throw new Error(`the stream sent an event of no documented type: ${JSON.stringify(event).slice(0, 200)}`);
      }
    }
    const started = first !== undefined;
    const complete = started && recipient.after(skippable(epochReset)).every((id) => correlationIds.includes(id));
    if (complete || ended || Date.now() > deadline) return { epochReset: started ? epochReset : false, correlationIds };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// ---------------------------------------------------------------------------------------------

/** A request for the examples: the run's token, `Accept: text/event-stream` unless `headers` name another Accept. */
function example(headers: [string, HeaderValue][], target = PATH, method = 'GET'): { before: PublishPlan; request: FuzzRequest } {
  const defaults: [string, HeaderValue][] = [['Authorization', 'Bearer {{r_token}}']];
  if (!headers.some(([name]) => name === 'Accept')) defaults.push(['Accept', 'text/event-stream']);
  return { before: ['mine', 'neighbour', 'mine', 'neighbour'], request: { route: ROUTE, kind: 'example', method, target, headers: [...defaults, ...headers] } };
}

/** Shapes every run tries first: positions of no database, of another client, garbage, repeated; the query; gzip; Accept; odd methods. */
const examples = [
  example([['Last-Event-ID', '{{r_beyond}}']]),
  example([['Last-Event-ID', '{{r_neighbour_above}}']]),
  example([['Last-Event-ID', '{{r_neighbour_below}}']]),
  example([['Last-Event-ID', '{{r_last}}']]),
  example([['Last-Event-ID', '9'.repeat(16)]]),
  example([['Last-Event-ID', '9'.repeat(10_000)]]),
  example([['Last-Event-ID', '-1']]),
  example([['Last-Event-ID', '\uff11']]),
  example([['Last-Event-ID', 'a\u0000']]),
  example([['Last-Event-ID', '{{r_first}}'], ['Last-Event-ID', '{{r_beyond}}']]),
  example([], `${PATH}?after={{r_beyond}}&epoch={{r_epoch}}`),
  example([], `${PATH}?after={{r_first}}&epoch=${'a'.repeat(32)}`),
  example([], `${PATH}?after={{r_first}}&after={{r_beyond}}`),
  example([['Last-Event-ID', '{{r_beyond}}']], `${PATH}?after={{r_first}}`),
  example([['Accept-Encoding', 'gzip'], ['Last-Event-ID', '{{r_first}}']]),
  example([['Accept', 'application/json']]),
  example([['Last-Event-ID', '{{r_last}}']], PATH, 'HEAD'),
  example([], PATH, 'POST'),
  example([], PATH, 'OPTIONS'),
];

describe('fuzz: notification stream, server-sent events', () => {
  const fuzz: FuzzSession = fuzzFile('stream-sse');
  let recipients: Recipients;

  beforeAll(() => {
    recipients = new Recipients(fuzz.world);
  });
  afterAll(() => recipients?.close());

  it('answers any event stream request below 500: a 4xx in the JSON error format, a 200 as text/event-stream that never skips what the client did not have', () =>
    fuzz.check(
      sseRequest,
      async ({ before, request }) => {
        const recipient = await recipients.fresh(before);
        const logMark = fuzz.logMark();
        const filled = await recipient.fill(request);
        const what = `${filled.method} ${typeof filled.target === 'string' ? filled.target.slice(0, 200) : '<bytes>'} [${request.kind}]`;
        const counted = await fuzz.counts();
        const outcome = await fuzz.sendFilled(request, filled, { keepStreaming: true });
        fuzz.expectAnswered(request, outcome)
        /** What the request may have confirmed: nothing, unless it started a stream from a position this client had. */
        let confirmed = 0;
        try {
          if (outcome.status >= 400) {
            // Answered by the service (not refused by Node's parser before it saw a request): its JSON error; a
            // browser's GET of no route (a path trick) gets the "Page not found" page instead (docs/errors.md).
            const accept = (filled.headers ?? []).filter(([name]) => name.toLowerCase() === 'accept').map(([, value]) => String(value)).join(', ');
            const pageNotFound = outcome.status === 404 && filled.method === 'GET' && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
            if (pageNotFound && !/^text\/html/.test(outcome.headers['content-type'] ?? '')) throw new Error(`${what} answered 404 ${outcome.headers['content-type']} to a browser, not the "Page not found" page`);
            if (outcome.headers['x-request-id'] && filled.method !== 'HEAD' && !pageNotFound) {
              let body: { message?: unknown; correlationId?: unknown } | undefined;
              try {
                body = JSON.parse(outcome.body.toString('utf8')) as typeof body;
              } catch {
                // Reported below.
              }
              if (!/^application\/json/.test(outcome.headers['content-type'] ?? '') || typeof body?.message !== 'string' || body.correlationId !== outcome.headers['x-request-id']) {
                throw new Error(`${what} answered ${outcome.status} ${outcome.headers['content-type']}: ${outcome.body.subarray(0, 200).toString()}, not {message, correlationId}`);
              }
            }
            // A refusal stores nothing (an earlier run's cursor may be saved meanwhile: cursors are written every 250 ms).
            fuzz.expectStoredOnly(counted, await fuzz.counts(), ['delivery_cursors'], request, outcome);
          } else if (outcome.status >= 200 && outcome.status < 300) {
            if (outcome.status !== 200 || outcome.headers['content-type'] !== 'text/event-stream; charset=utf-8') {
              throw new Error(`${what} answered ${outcome.status} ${outcome.headers['content-type']}, not 200 text/event-stream`);
            }
            if (outcome.socket) {
              // A position this client had confirms up to it; any other (a seq of no database, another client's beyond its own) confirms nothing.
              const positions = positionsOf(filled);
              const skippable = (epochReset: boolean) => (epochReset ? 0 : recipient.confirmableBy(positions));
              const { epochReset, correlationIds } = await readStream(outcome, recipient, skippable);
              confirmed = skippable(epochReset);
              const missing = recipient.after(confirmed).filter((id) => !correlationIds.includes(id));
              if (missing.length > 0) throw new Error(`${what}: the stream skipped ${missing.length} notification(s) the client never had (its seqs ${recipient.published.map((item) => item.seq).join(', ')})`);
            }
          } else {
            throw new Error(`${what} answered ${outcome.status}`);
          }
        } finally {
          outcome.socket?.destroy();
        }
        expectProcessAlive();
        fuzz.expectNothingLoggedSince(logMark, what);
        await recipient.expectReplayedAfter(confirmed, `${what} (answered ${outcome.status})`);
      },
      undefined,
      examples,
    ),
  TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
