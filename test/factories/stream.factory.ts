import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import WebSocket, { type PerMessageDeflateOptions } from 'ws';

const STREAM_PATH = '/voyage/notification/v1/ws/products';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A live stream connection that records every message it gets. */
export interface Stream {
  socket: WebSocket;
  /** Parsed text messages, in arrival order. */
  messages: Record<string, unknown>[];
  /** The same messages as received. */
  raw: string[];
  /** Binary frames (the stream sends none). */
  binary: number;
  closed: Promise<{ code: number; reason: string }>;
  /** The headers of the server's 101 answer (Sec-WebSocket-Extensions says what was negotiated). */
  upgradeHeaders: IncomingHttpHeaders;
  /** Bytes the client has read from the connection since the upgrade: what went over the wire. */
  bytesRead(): number;
  ids(): string[];
  /** Resolves once `count` messages were received in total; throws after `timeoutMs`. */
  received(count: number, timeoutMs?: number): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

/**
 * Opens the stream with `token`. `autoPong: false` makes a client that reads but never answers
 * pings, as a connection that dies with messages unread looks to the server. `perMessageDeflate`
 * is what the client offers (ws offers permessage-deflate unless told false).
 */
export async function openStream(
  baseUrl: string,
  token: string,
  options: { autoPong?: boolean; perMessageDeflate?: boolean | PerMessageDeflateOptions } = {},
): Promise<Stream> {
  const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}${STREAM_PATH}`, {
    headers: { authorization: `Bearer ${token}` },
    autoPong: options.autoPong ?? true,
    ...(options.perMessageDeflate === undefined ? {} : { perMessageDeflate: options.perMessageDeflate }),
  });
  let wire: Socket | undefined;
  let readAtUpgrade = 0;
  socket.once('upgrade', (response) => {
    stream.upgradeHeaders = response.headers;
    wire = response.socket as Socket;
    readAtUpgrade = wire.bytesRead;
  });
  const stream: Stream = {
    upgradeHeaders: {},
    bytesRead: () => (wire ? wire.bytesRead - readAtUpgrade : 0),
    socket,
    messages: [],
    raw: [],
    binary: 0,
    closed: new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() }))),
    ids: () => stream.messages.map((message) => message.correlationId as string),
    async received(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (stream.messages.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`expected ${count} messages within ${timeoutMs} ms, got ${stream.messages.length}: ${JSON.stringify(stream.ids())}`);
        }
        await sleep(10);
      }
      return stream.messages;
    },
    async close() {
      if (socket.readyState === WebSocket.CLOSED) return;
      if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
      else socket.close(1000);
      await Promise.race([stream.closed, sleep(2000).then(() => socket.terminate())]);
    },
  };
  socket.on('message', (data, isBinary) => {
    if (isBinary) {
      stream.binary++;
      return;
    }
    const text = data.toString();
    stream.raw.push(text);
    try {
      stream.messages.push(JSON.parse(text) as Record<string, unknown>);
    } catch {
      stream.messages.push({ unparsable: text }); // fails any comparison, visibly
    }
  });
  socket.on('error', () => {}); // the close event carries what matters
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('stream did not open within 5 s')), 5000);
    socket.once('open', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.once('unexpected-response', (_request, response) => {
      clearTimeout(timer);
      reject(new Error(`stream upgrade refused: ${response.statusCode}`));
    });
    socket.once('close', () => {
      clearTimeout(timer);
      reject(new Error('stream closed before it opened'));
    });
  });
  return stream;
}
