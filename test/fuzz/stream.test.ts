import type { Socket } from 'node:net';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { authorization, envelope, envelopeExamples, headerText, oddHeaders, oddMethod, pathTrick, type RouteTemplate } from './support/arbitraries.js';
import { expectProcessAlive, fuzzFile, TEST_TIMEOUT_MS } from './support/fuzz.js';
import type { FuzzRequest, HeaderValue } from './support/requests.js';
import { type ClientFrame, encodeFrame, FrameReader, OPCODE } from './support/websocket.js';

/** The notification stream: its upgrade request, and frames sent on an open stream. */

const PATH = '/voyage/notification/v1/ws/products';
const UPGRADE = `GET ${PATH} (upgrade)`;
/** WS_MAX_INCOMING_BYTES's default. */
const MAX_INCOMING = 4096;
const KEY = 'dGhlIHNhbXBsZSBub25jZQ==';

// ---------------------------------------------------------------------------------------------
// The upgrade request
// ---------------------------------------------------------------------------------------------

/** A header that is mostly right, sometimes another value, hostile text, or absent. */
const header = (name: string, right: string, others: fc.Arbitrary<string>): fc.Arbitrary<[string, HeaderValue][]> =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant([[name, right]] as [string, HeaderValue][]) },
    { weight: 2, arbitrary: others.map((value): [string, HeaderValue][] => [[name, value]]) },
    { weight: 1, arbitrary: headerText.map((value): [string, HeaderValue][] => [[name, value]]) },
    { weight: 1, arbitrary: fc.constant([] as [string, HeaderValue][]) },
  );

const upgradeRequest: fc.Arbitrary<FuzzRequest> = fc
  .record({
    method: fc.oneof({ weight: 8, arbitrary: fc.constant('GET') }, { weight: 1, arbitrary: oddMethod }),
    target: fc.oneof(
      { weight: 6, arbitrary: fc.constant<string | Uint8Array>(PATH) },
      { weight: 2, arbitrary: pathTrick(PATH) },
      { weight: 1, arbitrary: fc.constantFrom(`${PATH}?access_token={{subscribe_token}}`, `${PATH}?x=1&x=2`, `${PATH}#x`) },
    ),
    authorization: fc.oneof(
      { weight: 5, arbitrary: fc.constant<HeaderValue | null>('Bearer {{subscribe_token}}') },
      {
        weight: 4,
        arbitrary: authorization({ bearer: ['{{subscribe_token}}', '{{publish_token}}', '{{forged_subscribe_token}}', '{{access_token}}'], basic: [['{{cc_client_id}}', '{{cc_client_secret}}']] }),
      },
      { weight: 1, arbitrary: fc.constant(null) },
    ),
    upgrade: header('Upgrade', 'websocket', fc.constantFrom('WebSocket', 'h2c', 'websocket, h2c', 'h2c, websocket', '')),
    connection: header('Connection', 'Upgrade', fc.constantFrom('keep-alive, Upgrade', 'upgrade', 'close', 'keep-alive', 'Upgrade, HTTP2-Settings')),
    key: header('Sec-WebSocket-Key', KEY, fc.oneof(fc.base64String({ maxLength: 40 }), fc.constant('dGhlIHNhbXBsZSBub25jZQ'))),
    version: header('Sec-WebSocket-Version', '13', fc.constantFrom('8', '12', '14', '13, 8', '0013', '')),
    origin: fc.option(fc.oneof(fc.webUrl(), headerText), { freq: 4 }),
    protocol: fc.option(headerText, { freq: 4 }),
    extensions: fc.option(fc.oneof(fc.constantFrom('permessage-deflate; client_max_window_bits', 'permessage-deflate; server_max_window_bits=99', 'x-webkit-deflate-frame'), headerText), { freq: 4 }),
    extra: fc.option(oddHeaders, { freq: 6 }),
  })
  .map(({ method, target, authorization: auth, upgrade, connection, key, version, origin, protocol, extensions, extra }) => {
    const headers: [string, HeaderValue][] = [...upgrade, ...connection, ...key, ...version];
    if (auth !== null) headers.push(['Authorization', auth]);
    if (origin !== null) headers.push(['Origin', origin]);
    if (protocol !== null) headers.push(['Sec-WebSocket-Protocol', protocol]);
    if (extensions !== null) headers.push(['Sec-WebSocket-Extensions', extensions]);
    const request: FuzzRequest = { route: UPGRADE, kind: extra ? `handshake+${extra.label}` : 'handshake', method, target, headers };
    if (!extra) return request;
    if (extra.label.startsWith('version')) return { ...request, httpVersion: extra.label.slice('version '.length) };
    const replaced = new Set(extra.headers.map(([name]) => name.toLowerCase()));
    return {
      ...request,
      headers: [...headers.filter(([name]) => !replaced.has(name.toLowerCase())), ...extra.headers],
      body: extra.framing || extra.label.startsWith('content-length') ? { text: 'abcdefgh' } : undefined,
      framing: extra.framing,
    };
  });

// ---------------------------------------------------------------------------------------------
// Frames on an open stream
// ---------------------------------------------------------------------------------------------

/** What a group of frames should make the server do: ignore it, close with 1009, fail the connection, or answer a close. */
type Expectation = 'ignored' | 'too-big' | 'protocol-error' | 'client-close';

interface FrameGroup {
  label: string;
  expect: Expectation;
  frames: ClientFrame[];
}

const frameOf = (opcode: number, payload: Uint8Array, changes: Partial<ClientFrame> = {}): ClientFrame => ({ fin: true, rsv: 0, opcode, payload, masked: true, ...changes });
const utf8 = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));
const group = (label: string, expect: Expectation, frames: ClientFrame[]): FrameGroup => ({ label, expect, frames });

/** Within the limits: text (any Unicode, JSON), binary, pings, pongs with fake delivery numbers, fragmented messages. */
const ignoredGroup: fc.Arbitrary<FrameGroup> = fc.oneof(
  fc.oneof(fc.string({ unit: 'binary', maxLength: 1000 }), fc.string({ unit: 'grapheme', maxLength: 300 }), fc.json()).map((text) => group('text', 'ignored', [frameOf(OPCODE.text, utf8(text))])),
  fc.uint8Array({ maxLength: MAX_INCOMING }).map((bytes) => group('binary', 'ignored', [frameOf(OPCODE.binary, bytes)])),
  fc.constant(group('binary-at-limit', 'ignored', [frameOf(OPCODE.binary, new Uint8Array(MAX_INCOMING))])),
  fc.uint8Array({ maxLength: 125 }).map((bytes) => group('ping', 'ignored', [frameOf(OPCODE.ping, bytes)])),
  fc
    .oneof(fc.uint8Array({ maxLength: 125 }), fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((seq) => utf8(String(seq))), fc.nat().map((seq) => utf8(String(seq))))
    .map((bytes) => group('pong', 'ignored', [frameOf(OPCODE.pong, bytes)])),
  fc
    .tuple(fc.array(fc.uint8Array({ maxLength: 1000 }), { minLength: 2, maxLength: 4 }), fc.boolean(), fc.constantFrom(OPCODE.text, OPCODE.binary))
    .map(([parts, pingInside, opcode]) => {
      const payloads = opcode === OPCODE.text ? parts.map((part) => utf8(Buffer.from(part).toString('base64'))) : parts;
      const frames = payloads.map((payload, index) => frameOf(index === 0 ? opcode : OPCODE.continuation, payload, { fin: index === payloads.length - 1 }));
      if (pingInside) frames.splice(1, 0, frameOf(OPCODE.ping, utf8('inside')));
      const total = payloads.reduce((sum, payload) => sum + payload.length, 0);
      return group('fragmented', total > MAX_INCOMING ? 'too-big' : 'ignored', frames);
    }),
);

/** Over WS_MAX_INCOMING_BYTES: a big frame, a length header that claims more than is sent, a message whose fragments add up to too much. */
const tooBigGroup: fc.Arbitrary<FrameGroup> = fc.oneof(
  fc.tuple(fc.integer({ min: MAX_INCOMING + 1, max: 3 * MAX_INCOMING }), fc.constantFrom(OPCODE.text, OPCODE.binary)).map(([size, opcode]) => group('big-frame', 'too-big', [frameOf(opcode, new Uint8Array(size).fill(0x61))])),
  fc.constantFrom(MAX_INCOMING + 1, 65_536, 2 ** 31, 2 ** 53 - 1, 2 ** 63).map((declared) => group('declared-length', 'too-big', [frameOf(OPCODE.binary, utf8('abc'), { declaredLength: declared })])),
  fc.integer({ min: 2, max: 4 }).map((count) => {
    const part = new Uint8Array(Math.ceil((MAX_INCOMING + 1) / count) + 1);
    return group('fragments-over-limit', 'too-big', Array.from({ length: count }, (_, index) => frameOf(index === 0 ? OPCODE.binary : OPCODE.continuation, part, { fin: index === count - 1 })));
  }),
);

/** RFC 6455 violations: the server must fail the connection (not with 1011, not by crashing). */
const protocolErrorGroup: fc.Arbitrary<FrameGroup> = fc.oneof(
  fc.string({ maxLength: 50 }).map((text) => group('unmasked', 'protocol-error', [frameOf(OPCODE.text, utf8(text), { masked: false })])),
  fc.integer({ min: 1, max: 7 }).map((rsv) => group('rsv-bits', 'protocol-error', [frameOf(OPCODE.text, utf8('x'), { rsv })])),
  fc.constantFrom(3, 4, 5, 6, 7, 0xb, 0xc, 0xd, 0xe, 0xf).map((opcode) => group('reserved-opcode', 'protocol-error', [frameOf(opcode, utf8('x'))])),
  fc.uint8Array({ minLength: 126, maxLength: 300 }).map((bytes) => group('control-over-125', 'protocol-error', [frameOf(OPCODE.ping, bytes)])),
  fc.constant(group('fragmented-control', 'protocol-error', [frameOf(OPCODE.ping, utf8('x'), { fin: false })])),
  fc.uint8Array({ maxLength: 50 }).map((bytes) => group('orphan-continuation', 'protocol-error', [frameOf(OPCODE.continuation, bytes)])),
  fc.constant(group('interleaved-message', 'protocol-error', [frameOf(OPCODE.text, utf8('a'), { fin: false }), frameOf(OPCODE.text, utf8('b'))])),
  fc
    .tuple(fc.string({ maxLength: 20 }), fc.constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe0, 0xa4]))
    .map(([text, bad]) => group('invalid-utf8-text', 'protocol-error', [frameOf(OPCODE.text, new Uint8Array([...utf8(text), ...bad]))])),
  fc.constant(group('close-one-byte', 'protocol-error', [frameOf(OPCODE.close, new Uint8Array([0x03]))])),
  fc.constantFrom(0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65_535).map((code) => group('close-bad-code', 'protocol-error', [frameOf(OPCODE.close, new Uint8Array([code >> 8, code & 0xff]))])),
  fc.constant(group('close-bad-reason', 'protocol-error', [frameOf(OPCODE.close, new Uint8Array([0x03, 0xe8, 0xff, 0xfe]))])),
);

/** A proper close from the client: the server answers it and the connection ends. */
const clientCloseGroup: fc.Arbitrary<FrameGroup> = fc
  .tuple(fc.constantFrom(1000, 1001, 1003, 3000, 4000, 4999), fc.string({ maxLength: 40 }))
  .map(([code, reason]) => group('close', 'client-close', [frameOf(OPCODE.close, new Uint8Array([code >> 8, code & 0xff, ...utf8(reason).subarray(0, 120)]))]));

const frameSequence = fc.record({
  groups: fc.array(fc.oneof({ weight: 6, arbitrary: ignoredGroup }, { weight: 2, arbitrary: tooBigGroup }, { weight: 2, arbitrary: protocolErrorGroup }, { weight: 1, arbitrary: clientCloseGroup }), {
    minLength: 1,
    maxLength: 4,
  }),
  /** Where the bytes are cut into separate writes (the server must reassemble frames split anywhere). */
  cuts: fc.array(fc.nat(), { maxLength: 3 }),
});

async function writeInPieces(socket: Socket, bytes: Buffer, cuts: number[]): Promise<void> {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  let start = 0;
  for (const point of [...points, bytes.length]) {
    if (point > start) {
      socket.write(bytes.subarray(start, point));
      await new Promise((resolve) => setImmediate(resolve));
    }
    start = point;
  }
}

const openRequest: FuzzRequest = {
  route: UPGRADE,
  kind: 'handshake',
  method: 'GET',
  target: PATH,
  headers: [['Upgrade', 'websocket'], ['Connection', 'Upgrade'], ['Sec-WebSocket-Key', KEY], ['Sec-WebSocket-Version', '13'], ['Authorization', 'Bearer {{subscribe_token}}']],
};
/** The envelope's starting point: a plain GET of the stream path with the token (the tricks add or replace the upgrade headers). */
const STREAM_TEMPLATE: RouteTemplate = { method: 'GET', target: PATH, headers: [['Authorization', 'Bearer {{subscribe_token}}']] };

/** Shapes tried first on every run: h2c on the stream path, paths Nest's router would not match, NUL, a token in the query. */
const upgradeExamples: FuzzRequest[] = [
  { ...openRequest, kind: 'handshake+upgrade-h2c', headers: [...openRequest.headers!.filter(([name]) => name !== 'Upgrade' && name !== 'Connection'), ['Connection', 'Upgrade, HTTP2-Settings'], ['Upgrade', 'h2c'], ['HTTP2-Settings', 'AAMAAABkAARAAAAAAAIAAAAA']] },
  { ...openRequest, target: `${PATH}/` },
  { ...openRequest, target: `${PATH}%00` },
  { ...openRequest, target: PATH.toUpperCase() },
  { ...openRequest, target: '/voyage/notification/v1/ws/other' },
  { ...openRequest, headers: openRequest.headers!.filter(([name]) => name !== 'Sec-WebSocket-Key') },
  { ...openRequest, headers: [...openRequest.headers!.filter(([name]) => name !== 'Sec-WebSocket-Version'), ['Sec-WebSocket-Version', '8']] },
  { ...openRequest, headers: [...openRequest.headers!.filter(([name]) => name !== 'Authorization'), ['Authorization', 'Bearer {{publish_token}}']] },
  { ...openRequest, headers: [...openRequest.headers!.filter(([name]) => name !== 'Authorization'), ['Authorization', Uint8Array.from([0x42, 0x65, 0x61, 0x72, 0x65, 0x72, 0x20, 0x00, 0xff])]] },
  { ...openRequest, method: 'POST' },
];
const frameExamples = [
  { groups: [group('big-frame', 'too-big', [frameOf(OPCODE.binary, new Uint8Array(MAX_INCOMING + 1))])], cuts: [] },
  { groups: [group('declared-length', 'too-big', [frameOf(OPCODE.binary, utf8('abc'), { declaredLength: 2 ** 63 })])], cuts: [] },
  { groups: [group('unmasked', 'protocol-error', [frameOf(OPCODE.text, utf8('hello'), { masked: false })])], cuts: [] },
  { groups: [group('text', 'ignored', [frameOf(OPCODE.text, utf8('{"subscribe":"everything"}'))]), group('pong', 'ignored', [frameOf(OPCODE.pong, utf8('999999999'))])], cuts: [1, 5] },
];

describe('fuzz: notification stream', () => {
  const fuzz = fuzzFile('stream');
  let probes = 0;

  it('answers any upgrade request below 500 (101 or a refusal), in time, storing nothing when it refuses', () => fuzz.checkRequests(upgradeRequest, { examples: upgradeExamples }), TEST_TIMEOUT_MS);

  it('answers odd methods, path tricks, odd headers, wrong media types and big bodies on the stream path', () =>
    fuzz.checkRequests(envelope(UPGRADE, STREAM_TEMPLATE), { examples: envelopeExamples(UPGRADE, STREAM_TEMPLATE) }), TEST_TIMEOUT_MS);

  it('ignores frames within the limit, closes with 1009 over it, fails protocol violations without 1011 and without an error in the log', () =>
    fuzz.check(frameSequence, async ({ groups, cuts }) => {
      const logMark = fuzz.logMark();
      const opened = await fuzz.send(openRequest, { keepUpgraded: true });
      if (opened.kind !== 'response' || opened.status !== 101 || !opened.socket) {
        throw new Error(`the stream did not open: ${opened.kind === 'response' ? `${opened.status} ${opened.body.toString().slice(0, 200)}` : opened.kind}`);
      }
      const socket = opened.socket;
      socket.on('error', () => {});
      try {
        const reader = new FrameReader(socket, opened.rest);
        // Only the first group that is not ignored decides; what follows it may never be read.
        const decisive = groups.find((item) => item.expect !== 'ignored');
        const sent = decisive ? groups.slice(0, groups.indexOf(decisive) + 1) : groups;
        fuzz.recordFrames(sent.flatMap((item) => item.frames.map(() => item.label)));
        await writeInPieces(socket, Buffer.concat(sent.flatMap((item) => item.frames.map(encodeFrame))), cuts);
        const what = sent.map((item) => item.label).join(', ');

        if (!decisive) {
          // Still open and reading: a ping of our own is answered.
          const probe = utf8(`probe-${++probes}`);
          socket.write(encodeFrame(frameOf(OPCODE.ping, probe)));
          await reader.until(() => reader.frames.some((frame) => frame.opcode === OPCODE.pong && frame.payload.equals(probe)) || reader.closeCode !== undefined, 3_000);
          if (reader.closeCode !== undefined || reader.ended) throw new Error(`after ${what} the server closed the stream (${reader.closeCode ?? 'no close frame'}) instead of ignoring the frames`);
          if (!reader.frames.some((frame) => frame.opcode === OPCODE.pong && frame.payload.equals(probe))) throw new Error(`after ${what} the stream stopped answering pings`);
        } else {
          await reader.until(() => reader.closeCode !== undefined, 3_000);
          const code = reader.closeCode;
          if (code === undefined && !reader.ended) throw new Error(`after ${what} (${decisive.expect}) the stream stayed open for 3 s`);
          if (decisive.expect === 'too-big' && code !== 1009) throw new Error(`after ${what} the stream closed with ${code ?? 'no close frame'}, expected 1009`);
          if (code === 1011) throw new Error(`after ${what} the stream closed with 1011 (internal error)`);
        }
        expectProcessAlive();
        fuzz.expectNothingLoggedSince(logMark, what);
      } finally {
        socket.destroy();
      }
    }, undefined, frameExamples), TEST_TIMEOUT_MS);

  it('still serves the normal flows afterwards, and the process never saw an uncaught error', () => fuzz.expectServiceStillWorks());
});
