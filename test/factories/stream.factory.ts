import WebSocket from 'ws';

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
  ids(): string[];
  /** Resolves once `count` messages were received in total; throws after `timeoutMs`. */
  received(count: number, timeoutMs?: number): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

/**
 * Opens the stream with `token`. `autoPong: false` makes a client that reads but never answers
 * pings, as a connection that dies with messages unread looks to the server.
 */
export async function openStream(baseUrl: string, token: string, options: { autoPong?: boolean } = {}): Promise<Stream> {
  const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}${STREAM_PATH}`, {
    headers: { authorization: `Bearer ${token}` },
    autoPong: options.autoPong ?? true,
  });
  const stream: Stream = {
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
