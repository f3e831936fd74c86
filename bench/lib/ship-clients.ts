/**
 * The notification stream's three forms as a ship's client writes them, behind one shape, for the
 * ship benchmarks (bench/ships.ts and the subscriber it runs behind the satellite link):
 *
 * - `v1`, the seed's stream: `ws` offering no permessage-deflate unless asked (the seed's clients
 *   offer none); ws answers the delivery ping with its pong, which confirms;
 * - `v2`, subprotocol voyage.v2: acks each notification as it arrives and knows where it is
 *   (`after`, `epoch`) for its next connection; permessage-deflate offered as ws offers it by
 *   default when `compress`, compressing what it sends from 128 bytes (ws's default is 1 KiB),
 *   as the device SDK does, so its hourly token message goes compressed;
 * - `sse`, an EventSource (the `eventsource` package)
 *   sending `Accept-Encoding: gzip` when `compress` and `identity` otherwise, and Last-Event-ID
 *   when it resumes.
 *
 * Reconnecting is the caller's policy: a stream that ends stays ended (an EventSource's own
 * reconnect is stopped), and `onEnd` says why. Everything the service sends, a ping or an
 * event-stream comment included, calls `onTraffic`: a client's liveness check hangs on it.
 */
import { EventSource } from 'eventsource';
import WebSocket from 'ws';

export type ShipTransport = 'v1' | 'v2' | 'sse';

export const WS_PATH = '/voyage/notification/v1/ws/products';
export const SSE_PATH = '/voyage/notification/v1/sse/products';

export interface ReceivedNotification {
  /** v2 and SSE; the seed's stream carries none. */
  seq?: number;
  data: Record<string, unknown>;
}

export interface ShipStreamOptions {
  /** The service (or what stands in front of it): http://HOST:PORT. */
  base: string;
  token: string;
  transport: ShipTransport;
  /** permessage-deflate offered (WebSocket), gzip accepted (SSE). */
  compress: boolean;
  /** Where the last connection left off: v2's `after` and `epoch`, SSE's Last-Event-ID (v1 resumes from its cursor). */
  resume?: { seq: number; epoch?: string };
  /** A connection not open by then is given up (`onEnd('open timed out')`); default none. */
  openTimeoutMs?: number;
  onNotification?(notification: ReceivedNotification): void;
  onTraffic?(): void;
  /** v2: the token expires in `seconds`; answer with `replaceToken`. */
  onExpiring?(seconds: number): void;
  onEnd?(why: string): void;
}

export interface ShipStream {
  /** Resolves when the stream is open (the 101, or the event stream's 200); rejects when refused or given up. */
  opened: Promise<void>;
  /** Where to resume from on the next connection (v2 and SSE). */
  position(): { seq?: number; epoch?: string };
  /** v2: `{"type":"token",…}`. */
  replaceToken(token: string): void;
  /** Ends the stream at once, without a closing handshake (as a dead link is left). */
  close(): void;
}

/** What a ship's WebSocket client compresses of what it sends: the token message (about 560 bytes), not an ack. */
const CLIENT_COMPRESSION_THRESHOLD_BYTES = 128;

export function openShipStream(options: ShipStreamOptions): ShipStream {
  return options.transport === 'sse' ? openEventStream(options) : openWebSocket(options);
}

function openWebSocket(options: ShipStreamOptions): ShipStream {
  const v2 = options.transport === 'v2';
  const query = v2 && options.resume ? `?${new URLSearchParams({ after: String(options.resume.seq), epoch: options.resume.epoch ?? '' })}` : '';
  const socket = new WebSocket(`${options.base.replace(/^http/, 'ws')}${WS_PATH}${query}`, v2 ? ['voyage.v2'] : [], {
    headers: { Authorization: `Bearer ${options.token}` },
    perMessageDeflate: options.compress ? { threshold: CLIENT_COMPRESSION_THRESHOLD_BYTES } : false,
    ...(options.openTimeoutMs ? { handshakeTimeout: options.openTimeoutMs } : {}),
  });
  const position: { seq?: number; epoch?: string } = { ...options.resume };
  let ended = false;
  const end = (why: string) => {
    if (ended) return;
    ended = true;
    options.onEnd?.(why);
  };
  socket.on('ping', () => options.onTraffic?.());
  socket.on('message', (data) => {
    options.onTraffic?.();
    const message = JSON.parse(data.toString()) as { type?: string; seq?: number; epoch?: string; data?: Record<string, unknown>; in?: number };
    if (!v2) return options.onNotification?.({ data: message as Record<string, unknown> });
    if (message.type === 'notification') {
      [position.seq, position.epoch] = [message.seq, message.epoch];
      options.onNotification?.({ seq: message.seq, data: message.data! });
      socket.send(JSON.stringify({ type: 'ack', seq: message.seq }));
    } else if (message.type === 'expiring') options.onExpiring?.(message.in!);
  });
  socket.on('close', (code) => end(`closed ${code}`));
  socket.on('error', (error) => end(`error: ${error.message}`));
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_request, response) => {
      reject(new Error(`upgrade refused: ${response.statusCode}`));
      socket.terminate();
    });
    socket.once('error', reject);
    socket.once('close', (code) => reject(new Error(`closed ${code} before opening`)));
  });
  opened.catch(() => {}); // a caller that never awaits it must not see an unhandled rejection
  return {
    opened,
    position: () => ({ ...position }),
    replaceToken: (token) => socket.send(JSON.stringify({ type: 'token', access_token: token })),
    close: () => {
      ended = true;
      socket.terminate();
    },
  };
}

function openEventStream(options: ShipStreamOptions): ShipStream {
  const position: { seq?: number; epoch?: string } = { ...options.resume };
  let ended = false;
  let isOpen = false;
  let source: EventSource | undefined;
  let fail: (error: Error) => void = () => {};
  const end = (why: string) => {
    source?.close();
    clearTimeout(openTimer);
    if (ended) return;
    ended = true;
    fail(new Error(why));
    options.onEnd?.(why);
  };
  const openTimer = options.openTimeoutMs ? setTimeout(() => end('open timed out'), options.openTimeoutMs) : undefined;
  source = new EventSource(`${options.base}${SSE_PATH}`, {
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers as ConstructorParameters<typeof Headers>[0]);
      headers.set('Authorization', `Bearer ${options.token}`);
      headers.set('Accept-Encoding', options.compress ? 'gzip' : 'identity');
      if (!headers.has('Last-Event-ID') && options.resume) headers.set('Last-Event-ID', String(options.resume.seq));
      const response = await fetch(input, { ...init, headers });
      if (!response.body) return response;
      // Every chunk of the body, a comment line included (EventSource shows none): the link is alive.
      const tapped = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            options.onTraffic?.();
            controller.enqueue(chunk);
          },
        }),
      );
      return new Response(tapped, { status: response.status, statusText: response.statusText, headers: response.headers });
    },
  });
  source.addEventListener('notification', (event) => {
    position.seq = Number(event.lastEventId);
    options.onNotification?.({ seq: position.seq, data: JSON.parse(event.data) as Record<string, unknown> });
  });
  for (const closing of ['token-expired', 'shutdown']) source.addEventListener(closing, () => end(closing));
  // The stream ended or failed: EventSource would reconnect by itself; the caller decides instead.
  source.addEventListener('error', () => end(isOpen ? 'stream ended' : 'refused or unreachable'));
  const opened = new Promise<void>((resolve, reject) => {
    fail = reject;
    source.addEventListener('open', () => {
      isOpen = true;
      clearTimeout(openTimer);
      resolve();
    });
  });
  opened.catch(() => {}); // a caller that never awaits it must not see an unhandled rejection
  return {
    opened,
    position: () => ({ ...position }),
    replaceToken: () => {
      throw new Error('an event stream cannot replace its token: it reconnects with a new one');
    },
    close: () => {
      ended = true;
      clearTimeout(openTimer);
      source.close();
    },
  };
}
