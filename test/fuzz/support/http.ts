import { connect, type Socket } from 'node:net';

/**
 * A raw HTTP/1.1 client on node:net: the fuzz suite must send what fetch refuses to (NUL in a
 * header, raw bytes in the path, dot segments, TRACE, Transfer-Encoding tricks) and must see
 * exactly what comes back, including nothing at all.
 */

/** A request body, kept as data so a counterexample prints what it is rather than its bytes. */
export type BodySpec =
  | { form: [string, string][] }
  | { json: unknown }
  | { text: string }
  | { bytes: Uint8Array }
  /** `size` bytes of `unit` repeated: the 1 MB and 10 MB bodies. */
  | { repeat: string; size: number };

export interface WireRequest {
  method: string;
  /** The request-target exactly as sent (a string goes out as UTF-8). */
  target: string | Uint8Array;
  /** Sent in order. Host, Connection: close and Content-Length are added unless given here. */
  headers: [string, string | Uint8Array][];
  body?: Buffer;
  /** `chunked`: the body is sent chunk-encoded (Transfer-Encoding added unless given). */
  framing?: 'length' | 'chunked';
  /** `HTTP/1.1` unless given. */
  httpVersion?: string;
}

export type Outcome =
  | { kind: 'response'; status: number; headers: Record<string, string>; body: Buffer; ms: number; socket?: Socket; rest?: Buffer }
  /** The connection ended (closed or reset) before a status line arrived. */
  | { kind: 'no-answer'; detail: string; ms: number }
  /** Bytes came back that are not an HTTP response. */
  | { kind: 'garbage'; detail: string; ms: number }
  | { kind: 'timeout'; ms: number; received: string };

const CRLF = Buffer.from('\r\n');

/** The request on the wire: request line, headers (with the defaults), blank line, body. */
export function serialize(request: WireRequest, host: string): Buffer {
  const names = new Set(request.headers.map(([name]) => name.toLowerCase()));
  const headers = [...request.headers];
  if (!names.has('host')) headers.unshift(['Host', host]);
  if (!names.has('connection')) headers.push(['Connection', 'close']);
  const chunked = request.framing === 'chunked';
  if (chunked && !names.has('transfer-encoding')) headers.push(['Transfer-Encoding', 'chunked']);
  if (!chunked && request.body && !names.has('content-length') && !names.has('transfer-encoding')) {
    headers.push(['Content-Length', String(request.body.length)]);
  }
  const bytes = (value: string | Uint8Array) => (typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value));
  const parts: Buffer[] = [
    Buffer.from(`${request.method} `, 'utf8'),
    bytes(request.target),
    Buffer.from(` ${request.httpVersion ?? 'HTTP/1.1'}\r\n`),
  ];
  for (const [name, value] of headers) parts.push(Buffer.from(`${name}: `, 'utf8'), bytes(value), CRLF);
  parts.push(CRLF);
  if (request.body) parts.push(chunked ? chunk(request.body) : request.body);
  return Buffer.concat(parts);
}

/** RFC 9112 §7.1 chunked coding, 16 KiB per chunk. */
function chunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let offset = 0; offset < body.length; offset += 16_384) {
    const piece = body.subarray(offset, offset + 16_384);
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, CRLF);
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

interface Parsed {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  complete: boolean;
  rest: Buffer;
  /** The bytes after the final response's head, as received (still chunked, still compressed). */
  afterHead: Buffer;
}

class NotHttp extends Error {}

/**
 * Reads one final response from `buffer` (1xx interim responses skipped). `complete` is false
 * while more body is due; null while the head has not arrived.
 */
export function parseResponse(buffer: Buffer, method: string): Parsed | null {
  let offset = 0;
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n', offset);
    if (end < 0) {
      const start = buffer.subarray(offset, offset + 5).toString('latin1');
      if (start.length === 5 && start !== 'HTTP/') throw new NotHttp(buffer.subarray(offset, offset + 80).toString('latin1'));
      return null;
    }
    const [statusLine, ...lines] = buffer.subarray(offset, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (!match) throw new NotHttp(statusLine.slice(0, 80));
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
    const bodyStart = end + 4;
    if (status >= 100 && status < 200 && status !== 101) {
      offset = bodyStart;
      continue;
    }
    const rest = buffer.subarray(bodyStart);
    if (status === 101 || method === 'HEAD' || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0), complete: true, rest, afterHead: rest };
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) return { status, headers, ...dechunk(rest), afterHead: rest };
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      return { status, headers, body: rest.subarray(0, length), complete: rest.length >= length, rest: rest.subarray(length), afterHead: rest };
    }
    return { status, headers, body: rest, complete: false, rest: Buffer.alloc(0), afterHead: rest }; // delimited by the close
  }
}

export function dechunk(data: Buffer): { body: Buffer; complete: boolean; rest: Buffer } {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', offset);
    if (lineEnd < 0) return { body: Buffer.concat(parts), complete: false, rest: Buffer.alloc(0) };
    const size = parseInt(data.subarray(offset, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new NotHttp('bad chunk size');
    if (size === 0) {
      const trailerEnd = data.indexOf('\r\n\r\n', lineEnd);
      const complete = trailerEnd >= 0 || data.subarray(lineEnd, lineEnd + 4).equals(Buffer.from('\r\n\r\n'));
      return { body: Buffer.concat(parts), complete, rest: Buffer.alloc(0) };
    }
    if (data.length < lineEnd + 2 + size + 2) return { body: Buffer.concat(parts), complete: false, rest: Buffer.alloc(0) };
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
}

export interface SendOptions {
  timeoutMs?: number;
  /** Keep the socket of a 101 answer open and hand it over (the stream tests send frames on it). */
  keepUpgraded?: boolean;
  /**
   * A 2xx answer whose body has no end yet (an event stream) is handed over once its head is in:
   * the socket stays open and `rest` holds the body's bytes so far, as received.
   */
  keepStreaming?: boolean;
}

/** Sends `wire` to 127.0.0.1:`port` and waits for one complete answer, the end of the connection, or the timeout. */
export function exchange(port: number, wire: Buffer, method: string, options: SendOptions = {}): Promise<Outcome> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.setNoDelay(true);
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (outcome: Outcome, keep = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeAllListeners('data');
      if (!keep) socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ kind: 'timeout', ms: elapsed(), received: received.subarray(0, 200).toString('latin1') }), timeoutMs);
    const conclude = (ended: boolean, detail: string) => {
      let parsed: Parsed | null;
      try {
        parsed = parseResponse(received, method);
      } catch (error) {
        return finish({ kind: 'garbage', detail: (error as Error).message, ms: elapsed() });
      }
      if (parsed && !parsed.complete && !ended && options.keepStreaming && parsed.status >= 200 && parsed.status < 300) {
        return finish({ kind: 'response', status: parsed.status, headers: parsed.headers, body: Buffer.alloc(0), ms: elapsed(), socket, rest: parsed.afterHead }, true);
      }
      if (parsed && (parsed.complete || ended)) {
        const keep = parsed.status === 101 && options.keepUpgraded === true && !ended;
        return finish(
          { kind: 'response', status: parsed.status, headers: parsed.headers, body: parsed.body, ms: elapsed(), ...(keep ? { socket, rest: parsed.rest } : {}) },
          keep,
        );
      }
      if (ended) finish({ kind: 'no-answer', detail, ms: elapsed() });
    };
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
      conclude(false, '');
    });
    socket.on('end', () => conclude(true, 'closed by the server'));
    socket.on('close', () => conclude(true, 'closed'));
    // A reset while a big body is still going out is normal once the answer is in; without one it is no answer.
    socket.on('error', (error: NodeJS.ErrnoException) => conclude(true, error.code ?? error.message));
    socket.write(wire);
  });
}
