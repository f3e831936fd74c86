import type { Socket } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { clientToken, PUBLISH_SCOPE } from '../factories/notification.factory.js';
import { flipSignatureByte } from '../factories/state.factory.js';
import { revoke } from '../factories/token-flow.factory.js';
import { anyText, fieldValue, headerText, jwtLike, nestedJson, queryOf } from './support/arbitraries.js';
import { expectProcessAlive, type FuzzSession, fuzzFile, TEST_TIMEOUT_MS } from './support/fuzz.js';
import { type PublishPlan, type Recipient, Recipients } from './support/recipients.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';
import { type ClientFrame, encodeFrame, FrameReader, OPCODE } from './support/websocket.js';
import type { World } from './support/world.js';

/**
 * Protocol v2 on the notification stream (subprotocol voyage.v2): what a client may send on an
 * open stream — acks of any seq, replacement tokens of any kind, malformed and oversized
 * messages, floods — and the resume position of its upgrade. Each run has a client of its own
 * (support/recipients.ts) and ends with the property that matters most: a new plain connection
 * of that client gets again every notification the run did not validly acknowledge.
 */

const PATH = '/voyage/notification/v1/ws/products';
const UPGRADE = `GET ${PATH} (upgrade, voyage.v2)`;
/** WS_MAX_INCOMING_BYTES's default. */
const MAX_INCOMING = 4096;
const KEY = 'dGhlIHNhbXBsZSBub25jZQ==';
/** How long the stream gets to answer (a notification, a close, a pong). */
const WAIT_MS = 3_000;

// ---------------------------------------------------------------------------------------------
// What a v2 client sends
// ---------------------------------------------------------------------------------------------

/**
 * Where an ack's seq comes from: one the connection was sent (moved by `offset`), its last one,
 * the neighbour's (another client's) nearest below or above it, one no notification has yet, or
 * a literal number text (huge, negative, fractional, out of range).
 */
type SeqSpec =
  | { of: 'sent'; index: number; offset: number }
  | { of: 'last-sent'; offset: number }
  | { of: 'neighbour-below' | 'neighbour-above' | 'beyond' }
  | { of: 'literal'; text: string };

/** How the seq is written: a JSON number, a string, `N.0` (still an integer), `N.5`, `Ne0`, `-N`. */
type SeqForm = 'number' | 'string' | 'dot-zero' | 'half' | 'exponent' | 'negative';

/** Which token a `{"type":"token"}` carries: only `own-issued` and `own-forged` are valid for the stream. */
type TokenSpec =
  | 'own-issued'
  | 'own-forged'
  | 'own-expired'
  | 'own-bad-signature'
  | 'own-alg-none'
  | 'own-publish-scope'
  | 'own-other-audience'
  | 'own-other-issuer'
  | 'own-typ-jwt'
  | 'own-revoked'
  | 'other-client'
  | 'publisher'
  | { text: string };

type MessageSpec =
  | { kind: 'ack'; seq: SeqSpec; form: SeqForm; layout: 'plain' | 'seq-first' | 'extra-field' | 'duplicate-seq' | 'spaced' | 'no-seq' | 'type-case' }
  | { kind: 'token'; token: TokenSpec }
  /** access_token that is not a non-empty string. */
  | { kind: 'token-odd'; value: unknown }
  | { kind: 'unknown-type'; type: string; extra: Record<string, unknown> }
  /** Any JSON: arrays, nested junk, objects without a string `type`. */
  | { kind: 'json'; value: unknown }
  /** Text that is mostly not JSON: random, a truncated or garbled valid message. */
  | { kind: 'text'; text: string }
  | { kind: 'deep'; container: 'array' | 'object'; depth: number; typed: boolean };

/** A message as it is framed: one text frame, a binary frame, or text fragments; as it is, padded to the limit, or past it. */
interface Framed {
  message: MessageSpec;
  as: 'text' | 'binary' | 'fragmented';
  size: 'natural' | 'at-limit' | 'over-limit';
  overBy: number;
}

type Step =
  | { step: 'message'; framed: Framed }
  /** Hundreds of messages in one write, cycling through `pool`. */
  | { step: 'flood'; count: number; pool: MessageSpec[] }
  /** A notification for the client, published now: the step waits until the stream sent it. */
  | { step: 'publish' }
  | { step: 'pause'; ms: number };

const seqSpec: fc.Arbitrary<SeqSpec> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ of: fc.constant('sent' as const), index: fc.nat({ max: 9 }), offset: fc.constantFrom(0, 0, 0, -1, 1) }) },
  { weight: 3, arbitrary: fc.record({ of: fc.constant('last-sent' as const), offset: fc.constantFrom(0, 0, 1, 2, -1, 1_000_000) }) },
  { weight: 2, arbitrary: fc.constantFrom<SeqSpec>({ of: 'neighbour-below' }, { of: 'neighbour-above' }, { of: 'beyond' }) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('0', '-0', '-1', '1.5', '0.5', '9007199254740991', '9007199254740992', '9223372036854775807', '18446744073709551616', '1e308', '1e309', '-1e-7', '1e2', `1${'0'.repeat(400)}`)
      .map((text): SeqSpec => ({ of: 'literal', text })),
  },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double()).map((value): SeqSpec => ({ of: 'literal', text: JSON.stringify(value) })) },
);

const seqForm = fc.oneof(
  { weight: 8, arbitrary: fc.constant<SeqForm>('number') },
  { weight: 2, arbitrary: fc.constantFrom<SeqForm>('string', 'dot-zero', 'half', 'exponent', 'negative') },
);

const NAMED_TOKENS: TokenSpec[] = [
  'own-issued',
  'own-forged',
  'own-expired',
  'own-bad-signature',
  'own-alg-none',
  'own-publish-scope',
  'own-other-audience',
  'own-other-issuer',
  'own-typ-jwt',
  'own-revoked',
  'other-client',
  'publisher',
];
const tokenSpec: fc.Arbitrary<TokenSpec> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...NAMED_TOKENS) },
  { weight: 1, arbitrary: fc.oneof(jwtLike, anyText.filter((text) => text.length > 0)).map((text) => ({ text })) },
);

const ackMessage: fc.Arbitrary<MessageSpec> = fc.record({
  kind: fc.constant('ack' as const),
  seq: seqSpec,
  form: seqForm,
  layout: fc.oneof(
    { weight: 6, arbitrary: fc.constant('plain' as const) },
    { weight: 1, arbitrary: fc.constantFrom('seq-first' as const, 'extra-field' as const, 'duplicate-seq' as const, 'spaced' as const, 'no-seq' as const, 'type-case' as const) },
  ),
});

const tokenMessage: fc.Arbitrary<MessageSpec> = tokenSpec.map((token): MessageSpec => ({ kind: 'token', token }));

const messageSpec: fc.Arbitrary<MessageSpec> = fc.oneof(
  { weight: 6, arbitrary: ackMessage },
  { weight: 4, arbitrary: tokenMessage },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom<unknown>(null, '', 0, 5, true, [], {}), fc.jsonValue({ maxDepth: 2 })).map((value): MessageSpec => ({ kind: 'token-odd', value })) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.oneof(fc.constantFrom('hello', 'ping', 'pong', 'subscribe', 'ACK', 'Ack', 'ack ', 'token ', 'notification', 'reset', 'expiring', 'close', ''), fc.string({ maxLength: 20 })),
        fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      )
      .map(([type, extra]): MessageSpec => ({ kind: 'unknown-type', type, extra })),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        nestedJson,
        fc.jsonValue({ maxDepth: 3 }),
        fc.constantFrom<unknown>({ type: 1 }, { type: null }, { type: ['ack'] }, { type: { ack: 1 } }, { seq: 1 }, [{ type: 'ack', seq: 1 }], ['ack', 1], { type: 'ack', seq: { $gt: 0 } }),
      )
      .map((value): MessageSpec => ({ kind: 'json', value })),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        anyText,
        fc.constantFrom('', ' ', 'null', 'ack', '{', '{"type":"ack","seq":1', '\ufeff{"type":"ack","seq":1}', '{"type":"ack","seq":1}x', "{type:'ack',seq:1}", '{"type":"ack","seq":01}', '{"type":"ack","seq":+1}', '{"type":"ack","seq":0x1}', '{"type":"ack","seq":NaN}', '{"type":"ack","seq":Infinity}'),
      )
      .map((text): MessageSpec => ({ kind: 'text', text })),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({ container: fc.constantFrom('array' as const, 'object' as const), depth: fc.oneof(fc.integer({ min: 2, max: 400 }), fc.integer({ min: 400, max: 5_000 })), typed: fc.boolean() })
      .map((deep): MessageSpec => ({ kind: 'deep', ...deep })),
  },
);

const framed: fc.Arbitrary<Framed> = fc.record({
  message: messageSpec,
  as: fc.oneof({ weight: 8, arbitrary: fc.constant('text' as const) }, { weight: 1, arbitrary: fc.constant('binary' as const) }, { weight: 1, arbitrary: fc.constant('fragmented' as const) }),
  size: fc.oneof({ weight: 8, arbitrary: fc.constant('natural' as const) }, { weight: 1, arbitrary: fc.constant('at-limit' as const) }, { weight: 1, arbitrary: fc.constant('over-limit' as const) }),
  overBy: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 2 * MAX_INCOMING })),
});

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: framed.map((item): Step => ({ step: 'message', framed: item })) },
  {
    weight: 1,
    arbitrary: fc
      .record({ count: fc.integer({ min: 100, max: 400 }), pool: fc.array(fc.oneof({ weight: 4, arbitrary: ackMessage }, { weight: 2, arbitrary: tokenMessage }, { weight: 1, arbitrary: messageSpec }), { minLength: 1, maxLength: 5 }) })
      .map((flood): Step => ({ step: 'flood', ...flood })),
  },
  { weight: 2, arbitrary: fc.constant<Step>({ step: 'publish' }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 300 }).map((ms): Step => ({ step: 'pause', ms })) },
);

const publishPlan: fc.Arbitrary<PublishPlan> = fc.array(fc.constantFrom<'mine' | 'neighbour'>('mine', 'mine', 'neighbour'), { maxLength: 5 });

const session = fc.record({ before: publishPlan, steps: fc.array(step, { minLength: 1, maxLength: 6 }) });
type Session = { before: PublishPlan; steps: Step[] };

// ---------------------------------------------------------------------------------------------
// What the stream must do with each message (the contract, independent of the service's code)
// ---------------------------------------------------------------------------------------------

/** 1002 or 1009 at once; an ack of a seq; a token to check (4003 if it is not valid); nothing. */
type Effect = { close: 1002 | 1009 } | { ack: number } | { token: 'valid' | 'invalid' } | { ignored: true };

function effectOf(frame: { binary: boolean; payload: Buffer }, validTokens: Set<string>): Effect {
  if (frame.payload.length > MAX_INCOMING) return { close: 1009 };
  if (frame.binary) return { close: 1002 };
  let message: unknown;
  try {
    message = JSON.parse(frame.payload.toString('utf8'));
  } catch {
    return { close: 1002 };
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return { close: 1002 };
  const { type, seq, access_token: token } = message as Record<string, unknown>;
  if (typeof type !== 'string') return { close: 1002 };
  if (type === 'ack') return typeof seq === 'number' && Number.isSafeInteger(seq) && seq > 0 ? { ack: seq } : { close: 1002 };
  if (type === 'token') {
    if (typeof token !== 'string' || token.length === 0) return { close: 1002 };
    return { token: validTokens.has(token) ? 'valid' : 'invalid' };
  }
  return { ignored: true };
}

// ---------------------------------------------------------------------------------------------
// A run: its client, its connection, what it was sent
// ---------------------------------------------------------------------------------------------

/** The run's own client and open v2 stream, and what the stream sent so far. */
class V2Run {
  readonly received: { seq: number; correlationId: string }[] = [];
  readonly validTokens = new Set<string>();
  private readonly tokens = new Map<string, string>();
  private parsedFrames = 0;
  private probes = 0;

  constructor(
    private readonly world: World,
    readonly recipient: Recipient,
    readonly socket: Socket,
    readonly reader: FrameReader,
    readonly epoch: string,
    private readonly positions: Record<string, string>,
  ) {}

  get lastSent(): number {
    return this.received.at(-1)?.seq ?? 0;
  }

  get closed(): boolean {
    return this.reader.closeCode !== undefined || this.reader.ended;
  }

  /** Reads the server's new messages: each a JSON object of a documented type; notifications of this client only, each once, in seq order. */
  readMessages(): void {
    const own = new Map(this.recipient.published.map((item) => [item.correlationId, item.seq]));
    for (; this.parsedFrames < this.reader.frames.length; this.parsedFrames++) {
      const frame = this.reader.frames[this.parsedFrames];
      if (frame.opcode === OPCODE.binary) throw new Error('the stream sent a binary message');
      if (frame.opcode !== OPCODE.text) continue;
      const message = JSON.parse(frame.payload.toString('utf8')) as { type?: unknown; seq?: unknown; epoch?: unknown; data?: { correlationId?: unknown }; reason?: unknown; in?: unknown };
      if (message.type === 'notification') {
        const seq = message.seq as number;
        const correlationId = String(message.data?.correlationId);
        if (own.get(correlationId) !== seq) throw new Error(`the stream sent seq ${String(seq)} (${correlationId}), which is not this client's notification of that seq`);
        if (seq <= this.lastSent) throw new Error(`the stream sent seq ${seq} after ${this.lastSent}`);
        if (message.epoch !== this.epoch) throw new Error(`a notification carried epoch ${String(message.epoch)}, not the database's`);
        this.received.push({ seq, correlationId });
      } else if (message.type === 'reset') {
        throw new Error(`a plain connection of a client with nothing expired was told ${JSON.stringify(message)}`);
      } else if (message.type !== 'expiring' || typeof message.in !== 'number') {
        throw new Error(`the stream sent a message of no documented type: ${frame.payload.toString('utf8').slice(0, 200)}`);
      }
    }
  }

  /** Waits until the stream sent every notification of the client (or closed). */
  async allSent(): Promise<boolean> {
    await this.reader.until(() => {
      this.readMessages();
      return this.received.length === this.recipient.published.length || this.closed;
    }, WAIT_MS);
    this.readMessages();
    return this.received.length === this.recipient.published.length;
  }

  seqText({ seq, form }: Extract<MessageSpec, { kind: 'ack' }>): string {
    if (seq.of === 'literal') return seq.text;
    const sent = this.received.map((item) => item.seq);
    const value =
      seq.of === 'sent'
        ? (sent.length ? sent[seq.index % sent.length] : 0) + seq.offset
        : seq.of === 'last-sent'
          ? this.lastSent + seq.offset
          : Number(this.positions[{ 'neighbour-below': 'r_neighbour_below', 'neighbour-above': 'r_neighbour_above', beyond: 'r_beyond' }[seq.of]]);
    return { number: String(value), string: JSON.stringify(String(value)), 'dot-zero': `${value}.0`, half: `${value}.5`, exponent: `${value}e0`, negative: `-${value}` }[form];
  }

  /** The token a message carries, made once per run; the valid ones are remembered. */
  async token(spec: TokenSpec): Promise<string> {
    if (typeof spec === 'object') return spec.text;
    const made = this.tokens.get(spec);
    if (made !== undefined) return made;
    const { recipient, world } = this;
    const now = Math.floor(Date.now() / 1000);
    const elsewhere = 'https://elsewhere.example.test';
    const make: Record<Exclude<TokenSpec, { text: string }>, () => Promise<string>> = {
      'own-issued': () => clientToken(world.app, recipient.client),
      'own-forged': () => recipient.forgeToken(),
      'own-expired': () => recipient.forgeToken({ iat: now - 120, exp: now - 60 }),
      'own-bad-signature': async () => flipSignatureByte(await recipient.forgeToken()),
      'own-alg-none': async () => {
        const [, payload] = (await recipient.forgeToken()).split('.');
        return `${Buffer.from('{"alg":"none","typ":"at+jwt"}').toString('base64url')}.${payload}.`;
      },
      'own-publish-scope': () => recipient.forgeToken({ scope: PUBLISH_SCOPE }),
      'own-other-audience': () => recipient.forgeToken({ aud: elsewhere }),
      'own-other-issuer': () => recipient.forgeToken({ iss: elsewhere }),
      'own-typ-jwt': () => recipient.forgeToken({}, { typ: 'JWT' }),
      'own-revoked': async () => {
        const token = await recipient.forgeToken();
        const revoked = await revoke(world.app, recipient.client, token);
        if (revoked.status !== 200) throw new Error(`revoking the client's token answered ${revoked.status}: ${revoked.text}`);
        return token;
      },
      'other-client': () => world.fill('{{subscribe_token}}'),
      publisher: () => world.fill('{{publish_token}}'),
    };
    const token = await make[spec]();
    this.tokens.set(spec, token);
    if (spec === 'own-issued' || spec === 'own-forged') this.validTokens.add(token);
    return token;
  }

  async text(message: MessageSpec): Promise<string> {
    switch (message.kind) {
      case 'ack': {
        const seq = this.seqText(message);
        return {
          plain: `{"type":"ack","seq":${seq}}`,
          'seq-first': `{"seq":${seq},"type":"ack"}`,
          'extra-field': `{"type":"ack","seq":${seq},"x":{"seq":1}}`,
          'duplicate-seq': `{"type":"ack","seq":1,"seq":${seq}}`,
          spaced: ` \n{ "type" : "ack" ,\t"seq" : ${seq} }\r\n`,
          'no-seq': '{"type":"ack"}',
          'type-case': `{"type":"ACK","seq":${seq}}`,
        }[message.layout];
      }
      case 'token':
        return JSON.stringify({ type: 'token', access_token: await this.token(message.token) });
      case 'token-odd':
        return `{"type":"token","access_token":${JSON.stringify(message.value) ?? 'null'}}`;
      case 'unknown-type': {
        const object: Record<string, unknown> = {};
        for (const [key, value] of Object.entries(message.extra)) Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
        return JSON.stringify({ ...object, type: message.type });
      }
      case 'json':
        return JSON.stringify(message.value) ?? 'null';
      case 'text':
        return message.text;
      case 'deep': {
        const nested = message.container === 'array' ? `${'['.repeat(message.depth)}${']'.repeat(message.depth)}` : `${'{"a":'.repeat(message.depth)}null${'}'.repeat(message.depth)}`;
        return message.typed ? `{"type":"ack","seq":1,"x":${nested}}` : nested;
      }
    }
  }

  /** The frames of one message, and the payload the server reassembles from them. */
  async frames({ message, as, size, overBy }: Framed): Promise<{ frames: ClientFrame[]; payload: Buffer; binary: boolean }> {
    let payload = Buffer.from(await this.text(message), 'utf8');
    // Trailing whitespace keeps JSON what it was (and junk junk), at exactly the limit or past it.
    const target = size === 'at-limit' ? MAX_INCOMING : size === 'over-limit' ? MAX_INCOMING + overBy : payload.length;
    if (payload.length < target) payload = Buffer.concat([payload, Buffer.alloc(target - payload.length, 0x20)]);
    const frame = (opcode: number, bytes: Uint8Array, fin = true): ClientFrame => ({ fin, rsv: 0, opcode, payload: bytes, masked: true });
    if (as === 'binary') return { frames: [frame(OPCODE.binary, payload)], payload, binary: true };
    if (as === 'text' || payload.length < 2) return { frames: [frame(OPCODE.text, payload)], payload, binary: false };
    // Fragments cut at byte boundaries may split a UTF-8 sequence: only the whole message must be valid.
    const cut = Math.max(1, Math.floor(payload.length / 2));
    return { frames: [frame(OPCODE.text, payload.subarray(0, cut), false), frame(OPCODE.continuation, payload.subarray(cut))], payload, binary: false };
  }

  /** Whether the stream still answers a ping of ours. */
  async answersPing(): Promise<boolean> {
    const probe = Buffer.from(`probe-${++this.probes}`);
    this.socket.write(encodeFrame({ fin: true, rsv: 0, opcode: OPCODE.ping, payload: probe, masked: true }));
    const answered = () => this.reader.frames.some((frame) => frame.opcode === OPCODE.pong && frame.payload.equals(probe));
    await this.reader.until(() => answered() || this.reader.closeCode !== undefined, WAIT_MS);
    return answered();
  }

  /** Ends the stream as a client should (a close frame, then the server's answer), so every message sent before was read. */
  async closeGracefully(): Promise<void> {
    if (!this.closed) {
      this.socket.write(encodeFrame({ fin: true, rsv: 0, opcode: OPCODE.close, payload: Buffer.from([0x03, 0xe8]), masked: true }));
      await this.reader.until(() => this.reader.closeCode !== undefined || this.reader.ended, WAIT_MS);
    }
    this.socket.destroy();
  }
}

/** A v2 upgrade of the recipient (its own token), as a raw request. */
function v2Upgrade(target: string, protocols: string, token = '{{r_token}}'): FuzzRequest {
  const headers: [string, HeaderValue][] = [
    ['Upgrade', 'websocket'],
    ['Connection', 'Upgrade'],
    ['Sec-WebSocket-Key', KEY],
    ['Sec-WebSocket-Version', '13'],
    ['Sec-WebSocket-Protocol', protocols],
    ['Authorization', `Bearer ${token}`],
  ];
  return { route: UPGRADE, kind: 'handshake', method: 'GET', target, headers };
}

const describeFrames = (frames: string[]) => (frames.length > 6 ? `${frames.slice(0, 6).join(', ')}, … (${frames.length} messages)` : frames.join(', '));

// ---------------------------------------------------------------------------------------------
// The upgrade's resume position
// ---------------------------------------------------------------------------------------------

const SEQ_VALUES = ['{{r_first}}', '{{r_last}}', '{{r_beyond}}', '{{r_neighbour_below}}', '{{r_neighbour_above}}'];
const afterValue = fc.oneof(
  { weight: 4, arbitrary: fieldValue(...SEQ_VALUES) },
  {
    weight: 3,
    arbitrary: fc.constantFrom('0', '00', '-1', '-0', '1.5', '+1', ' 1', '1 ', '1e3', '0x10', '\uff19', '\u0663', '9'.repeat(16), '9'.repeat(30), '9007199254740991', '9007199254740992', '9223372036854775807', ''),
  },
  { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String) },
);
const epochValue = fc.oneof(
  { weight: 4, arbitrary: fieldValue('{{r_epoch}}') },
  { weight: 2, arbitrary: fc.constantFrom('a'.repeat(32), '0'.repeat(32), 'x', '-', '_', 'a'.repeat(64), 'a'.repeat(65), 'no spaces', '', 'é') },
);
const upgradeQuery = fc.record({
  before: publishPlan,
  protocols: fc.oneof(
    { weight: 6, arbitrary: fc.constant('voyage.v2') },
    { weight: 2, arbitrary: fc.constantFrom('voyage.v1, voyage.v2', 'voyage.v2, voyage.v2', 'x,voyage.v2', 'VOYAGE.V2', 'voyage.v3', 'voyage.v2;q=1') },
    { weight: 1, arbitrary: headerText },
  ),
  query: queryOf({ after: afterValue, epoch: epochValue }, [
    ['after', '{{r_last}}'],
    ['epoch', '{{r_epoch}}'],
  ]),
});
type UpgradeQuery = { before: PublishPlan; protocols: string; query: string };

const upgradeExamples: UpgradeQuery[] = [
  ...['-1', '1.5', 'abc', '9'.repeat(30), '{{r_beyond}}', '{{r_neighbour_above}}', '{{r_last}}&after={{r_beyond}}', '{{r_beyond}}&after={{r_first}}'].map((after) => ({
    before: ['mine', 'neighbour', 'mine', 'neighbour'] as PublishPlan,
    protocols: 'voyage.v2',
    query: `after=${after}&epoch={{r_epoch}}`,
  })),
  { before: ['mine', 'mine'], protocols: 'voyage.v2', query: `after={{r_first}}&epoch=${'a'.repeat(32)}` },
  { before: ['mine'], protocols: 'voyage.v2', query: 'epoch=no%20spaces' },
  { before: ['mine'], protocols: 'voyage.v2', query: 'after=&epoch=' },
  { before: ['mine'], protocols: 'voyage.v2', query: 'after=%FF&epoch=%00' },
];

// ---------------------------------------------------------------------------------------------

const ack = (seq: SeqSpec, form: SeqForm = 'number'): MessageSpec => ({ kind: 'ack', seq, form, layout: 'plain' });
const token = (spec: TokenSpec): MessageSpec => ({ kind: 'token', token: spec });
const send = (message: MessageSpec, as: Framed['as'] = 'text', size: Framed['size'] = 'natural'): Step => ({ step: 'message', framed: { message, as, size, overBy: 1 } });

/** Shapes every run tries first. */
const sessionExamples: Session[] = [
  // Acks of what was never sent: past everything, the largest safe integer, the neighbour's next; then a valid one of the first.
  {
    before: ['mine', 'neighbour', 'mine', 'neighbour'],
    steps: [send(ack({ of: 'beyond' })), send(ack({ of: 'literal', text: '9007199254740991' })), send(ack({ of: 'neighbour-above' })), send(ack({ of: 'sent', index: 0, offset: 0 }))],
  },
  // A neighbour's seq inside the client's own range confirms what came before it, nothing after.
  { before: ['mine', 'neighbour', 'mine'], steps: [send(ack({ of: 'neighbour-below' })), { step: 'publish' }] },
  ...(['string', 'half', 'negative', 'dot-zero'] as SeqForm[]).map((form): Session => ({ before: ['mine', 'mine'], steps: [send(ack({ of: 'sent', index: 0, offset: 0 }, form))] })),
  ...(['other-client', 'own-expired', 'own-bad-signature', 'own-revoked', 'publisher', 'own-forged'] as TokenSpec[]).map((spec): Session => ({ before: ['mine'], steps: [send(token(spec)), { step: 'publish' }] })),
  { before: ['mine'], steps: [send(ack({ of: 'last-sent', offset: 0 }), 'binary')] },
  { before: ['mine'], steps: [send(ack({ of: 'last-sent', offset: 0 }), 'text', 'at-limit')] },
  { before: ['mine'], steps: [send(ack({ of: 'last-sent', offset: 0 }), 'fragmented', 'over-limit')] },
  {
    before: ['mine', 'neighbour', 'mine'],
    steps: [{ step: 'flood', count: 300, pool: [ack({ of: 'beyond' }), ack({ of: 'sent', index: 0, offset: 0 }), ack({ of: 'literal', text: '-1' })] }, { step: 'publish' }],
  },
  { before: ['mine'], steps: [{ step: 'flood', count: 200, pool: [token('own-forged'), token('other-client'), token('own-forged')] }] },
];

describe('fuzz: notification stream, protocol v2', () => {
  const fuzz: FuzzSession = fuzzFile('stream-v2');
  let recipients: Recipients;

  beforeAll(() => {
    recipients = new Recipients(fuzz.world);
  });
  afterAll(() => recipients?.close());

  /** Opens the recipient's v2 stream as a raw client and waits for its replay. */
  async function open(recipient: Recipient): Promise<V2Run> {
    const request = v2Upgrade(PATH, 'voyage.v2');
    const opened = await fuzz.sendFilled(request, await recipient.fill(request), { keepUpgraded: true });
    if (opened.kind !== 'response' || opened.status !== 101 || !opened.socket) {
      throw new Error(`the v2 stream did not open: ${opened.kind === 'response' ? `${opened.status} ${opened.body.toString().slice(0, 200)}` : opened.kind}`);
    }
    if (opened.headers['sec-websocket-protocol'] !== 'voyage.v2') throw new Error(`the upgrade chose subprotocol ${opened.headers['sec-websocket-protocol']}`);
    opened.socket.on('error', () => {});
    const reader = new FrameReader(opened.socket, opened.rest);
    const positions = await recipient.fill({ r_neighbour_below: '{{r_neighbour_below}}', r_neighbour_above: '{{r_neighbour_above}}', r_beyond: '{{r_beyond}}' });
    const run = new V2Run(fuzz.world, recipient, opened.socket, reader, await recipients.databaseEpoch(), positions);
    if (!(await run.allSent())) throw new Error(`the v2 stream sent ${run.received.length} of the client's ${recipient.published.length} notifications on connect`);
    return run;
  }

  /** The service answers HTTP meanwhile: health, and the client's own history. */
  async function expectHttpServing(recipient: Recipient): Promise<void> {
    const health = await fetch(`${fuzz.world.app.baseUrl}/health`);
    if (health.status !== 200) throw new Error(`GET /health answered ${health.status} meanwhile`);
    const history = await fetch(`${fuzz.world.app.baseUrl}/voyage/notification/v1/notifications?after=0`, { headers: { Authorization: `Bearer ${recipient.token}` } });
    if (history.status !== 200) throw new Error(`GET /voyage/notification/v1/notifications answered ${history.status} meanwhile`);
    await history.arrayBuffer();
  }

  it('closes only with a documented code (1002 not v2, 1009 too big, 4003 bad token), and a new connection gets again everything not validly acknowledged', () =>
    fuzz.check(
      session,
      async ({ before, steps }) => {
        const recipient = await recipients.fresh(before);
        const logMark = fuzz.logMark();
        const run = await open(recipient);
        const sentLabels: string[] = [];
        const effects: Effect[] = [];
        /** The highest seq a valid ack named that the stream had sent: the most a confirmation may cover. */
        let confirmable = 0;
        try {
          for (const item of steps) {
            if (run.closed || effects.some((effect) => 'close' in effect)) break;
            if (item.step === 'pause') {
              await new Promise((resolve) => setTimeout(resolve, item.ms));
              continue;
            }
            if (item.step === 'publish') {
              const published = await recipient.publish();
              sentLabels.push('publish');
              await run.reader.until(() => {
                run.readMessages();
                return run.lastSent >= published.seq || run.closed;
              }, WAIT_MS);
              run.readMessages();
              if (run.lastSent < published.seq && !run.closed) throw new Error(`a notification published on the open stream (seq ${published.seq}) did not arrive within ${WAIT_MS} ms`);
              continue;
            }
            const messages = item.step === 'message' ? [item.framed] : Array.from({ length: item.count }, (_, index): Framed => ({ message: item.pool[index % item.pool.length], as: 'text', size: 'natural', overBy: 1 }));
            const bytes: Buffer[] = [];
            run.readMessages();
            for (const message of messages) {
              const { frames, payload, binary } = await run.frames(message);
              const effect = effectOf({ binary, payload }, run.validTokens);
              effects.push(effect);
              // Everything the stream was sent has arrived (publishes wait for it): an ack up to it is valid.
              if ('ack' in effect && effect.ack <= run.lastSent) confirmable = Math.max(confirmable, effect.ack);
              bytes.push(...frames.map(encodeFrame));
              sentLabels.push(`${message.message.kind}${message.message.kind === 'token' ? `:${typeof message.message.token === 'string' ? message.message.token : 'text'}` : ''}${message.as === 'text' ? '' : `/${message.as}`}${message.size === 'natural' ? '' : `/${message.size}`}`);
            }
            fuzz.recordFrames(item.step === 'flood' ? [`flood of ${messages.length}`] : sentLabels.slice(-1));
            run.socket.write(Buffer.concat(bytes));
          }
          const what = describeFrames(sentLabels);
          await expectHttpServing(recipient);

          // How the stream must end, if it must: the first message it must close on decides, unless a bad token came before it.
          const decisive = effects.findIndex((effect) => 'close' in effect);
          const tokens = (decisive < 0 ? effects : effects.slice(0, decisive)).filter((effect): effect is { token: 'valid' | 'invalid' } => 'token' in effect);
          const badToken = tokens.some((effect) => effect.token === 'invalid');
          if (decisive >= 0) {
            const expected = (effects[decisive] as { close: number }).close;
            await run.reader.until(() => run.reader.closeCode !== undefined, WAIT_MS);
            const code = run.reader.closeCode;
            if (code !== expected && !(badToken && code === 4003)) throw new Error(`after ${what} the stream closed with ${code ?? (run.reader.ended ? 'no close frame' : 'nothing (still open)')}, expected ${expected}`);
          } else if (tokens.at(-1)?.token === 'invalid') {
            // The last token sent is always checked: an invalid one closes with 4003.
            await run.reader.until(() => run.reader.closeCode !== undefined, WAIT_MS);
            if (run.reader.closeCode !== 4003) throw new Error(`after ${what} the stream closed with ${run.reader.closeCode ?? 'nothing (still open)'}, expected 4003`);
          } else if (!(await run.answersPing())) {
            // An invalid token followed by a valid one may still have closed it with 4003 (the one being checked when the next arrived).
            if (!(badToken && run.reader.closeCode === 4003)) throw new Error(`after ${what} the stream ${run.reader.closeCode !== undefined ? `closed with ${run.reader.closeCode}` : 'stopped answering pings'}; nothing it was sent should end it`);
          }
          await run.closeGracefully();
          expectProcessAlive();
          fuzz.expectNothingLoggedSince(logMark, what);
          await recipient.expectReplayedAfter(confirmable, what);
        } finally {
          run.socket.destroy();
        }
      },
      undefined,
      sessionExamples,
    ),
  TEST_TIMEOUT_MS);

  it('answers an upgrade with any resume position 101 or 400, and resuming never skips what the client did not have', () =>
    fuzz.check(
      upgradeQuery,
      async ({ before, protocols, query }) => {
        const recipient = await recipients.fresh(before);
        const logMark = fuzz.logMark();
        const request = v2Upgrade(`${PATH}?${query}`, protocols);
        const filled = await recipient.fill(request);
        const target = String(filled.target);
        const what = `an upgrade to ${target.length > 300 ? `${target.slice(0, 300)}…(${target.length} characters)` : target} [${protocols}]`;
        const counted = await fuzz.counts();
        const outcome = await fuzz.sendFilled(request, filled, { keepUpgraded: true });
        fuzz.expectAnswered(request, outcome);
        // 431: a request line past Node's limit, refused before anything reads it.
        if (outcome.status !== 101 && outcome.status !== 400 && outcome.status !== 431) throw new Error(`${what} answered ${outcome.status}, expected 101 or 400`);
        // What the stream may skip: nothing on v1 (it ignores the query), on v2 only up to a seq this client had.
        let bound = 0;
        if (outcome.status !== 101) {
          // A refusal stores nothing (an earlier run's cursor may be saved meanwhile: cursors are written every 250 ms).
          fuzz.expectStoredOnly(counted, await fuzz.counts(), ['delivery_cursors'], request, outcome);
        } else if (outcome.socket) {
          const socket = outcome.socket;
          socket.on('error', () => {});
          try {
            const reader = new FrameReader(socket, outcome.rest);
            const v2 = outcome.headers['sec-websocket-protocol'] === 'voyage.v2';
            const afters = new URL(target, 'http://localhost').searchParams.getAll('after');
            const messages = () => reader.frames.filter((frame) => frame.opcode === OPCODE.text).map((frame) => JSON.parse(frame.payload.toString('utf8')) as Record<string, unknown>);
            // A position from another database (a seq this client never had, another epoch) is told first, and confirms nothing.
            const reset = () => v2 && messages()[0]?.type === 'reset';
            const skippable = () => (v2 && !reset() ? recipient.confirmableBy(afters) : 0);
            const correlationIds = () => messages().map((message) => String((v2 ? (message.data as Record<string, unknown> | undefined) : message)?.correlationId));
            await reader.until(() => recipient.after(skippable()).every((id) => correlationIds().includes(id)), WAIT_MS);
            if (v2 && messages().some((message, index) => message.type === 'reset' && index > 0)) throw new Error(`after ${what} a reset came after a notification`);
            bound = skippable();
            const missing = recipient.after(bound).filter((id) => !correlationIds().includes(id));
            if (missing.length > 0) throw new Error(`after ${what} the stream skipped ${missing.length} notification(s) the client never had (its seqs ${recipient.published.map((item) => item.seq).join(', ')})`);
            socket.write(encodeFrame({ fin: true, rsv: 0, opcode: OPCODE.close, payload: Buffer.from([0x03, 0xe8]), masked: true }));
            await reader.until(() => reader.closeCode !== undefined, WAIT_MS);
          } finally {
            socket.destroy();
          }
        }
        expectProcessAlive();
        fuzz.expectNothingLoggedSince(logMark, what);
        await recipient.expectReplayedAfter(bound, `${what} (answered ${outcome.status})`);
      },
      undefined,
      upgradeExamples,
    ),
  TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
