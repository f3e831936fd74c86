import type WebSocket from 'ws';
import type { Instance } from './instances.js';
import { type AttemptLog, openEventStream, openStream } from './requests.js';

/**
 * The three kinds of subscriber a fault world can mix, each written the way a client of its
 * transport should be: what it opens, how it reads, and where it resumes after a cut. The rule
 * they share: a client's position is only ever what it processed.
 *
 * - `v1`: the seed's WebSocket stream. It has no position of its own: its pongs move the
 *   service's cursor, and the service may send again what it sent and was not confirmed.
 * - `v2`: protocol v2 (subprotocol `voyage.v2`). It processes notifications in batches, acks each
 *   batch once processed, and resumes with `?after=<last seq processed>&epoch=E`. What it received
 *   and had not processed when the connection ends is dropped, as by a device that restarts:
 *   the resume brings it again.
 * - `sse`: server-sent events read by a real EventSource, resuming with `Last-Event-ID` set to the
 *   id of the last notification processed.
 */
export type SubscriberKind = 'v1' | 'v2' | 'sse';
export const SUBSCRIBER_KINDS: readonly SubscriberKind[] = ['v1', 'v2', 'sse'];

/** Whether a kind may be sent again what it already received: v1 and v2 when what was sent was not yet confirmed; SSE resumes exactly after its last id. */
export const REPEATS_ALLOWED: Record<SubscriberKind, boolean> = { v1: true, v2: true, sse: false };

/** What a reader reports of one stream, on the instance it is open on. */
export interface ReadSink {
  /** A notification as the seed's fields: JSON text (v1, SSE) or already parsed (v2's `data`). */
  notification(instance: string, message: string | unknown): void;
  /** The service said the history is incomplete (v2's `reset` message, SSE's `reset` event). */
  reset(instance: string, reason: string): void;
  /** A message that is not one the protocol defines. */
  unreadable(): void;
}

/** One open stream of a reader: how it ended (a WebSocket close code; see openEventStream for SSE). */
export interface ReaderStream {
  closed: Promise<number>;
  terminate(): void;
}

/** One subscriber's way of reading, across its connections (it keeps the position between them). */
export interface StreamReader {
  readonly kind: SubscriberKind;
  /** Opens a stream on `instance` with `token`, resuming where this reader is; undefined when it was refused or failed. */
  open(log: AttemptLog, instance: Instance, token: string): Promise<ReaderStream | undefined>;
}

export function createReader(kind: SubscriberKind, sink: ReadSink): StreamReader {
  switch (kind) {
    case 'v1':
      return new SeedReader(sink);
    case 'v2':
      return new V2Reader(sink);
    case 'sse':
      return new EventStreamReader(sink);
  }
}

class SeedReader implements StreamReader {
  readonly kind = 'v1';
  constructor(private readonly sink: ReadSink) {}

  async open(log: AttemptLog, instance: Instance, token: string): Promise<ReaderStream | undefined> {
    const { stream } = await openStream(log, 'subscriber', instance, token, { onMessage: (text) => this.sink.notification(instance.name, text) });
    return stream && { closed: stream.closed, terminate: () => stream.socket.terminate() };
  }
}

/** A v2 batch is processed when it has this many notifications, or this long after its first arrived. */
const V2_BATCH = 10;
const V2_BATCH_WAIT_MS = 200;

interface V2Notification {
  seq: number;
  epoch: string;
  data: unknown;
}

class V2Reader implements StreamReader {
  readonly kind = 'v2';
  /** The last notification processed: where the next connection resumes. */
  private position?: { seq: number; epoch: string };

  constructor(private readonly sink: ReadSink) {}

  async open(log: AttemptLog, instance: Instance, token: string): Promise<ReaderStream | undefined> {
    const query: Record<string, string> = {};
    if (this.position) {
      query.after = String(this.position.seq);
      if (this.position.epoch) query.epoch = this.position.epoch;
    }
    const received: V2Notification[] = [];
    let timer: NodeJS.Timeout | undefined;
    const processBatch = (socket: WebSocket) => {
      clearTimeout(timer);
      timer = undefined;
      const last = received.at(-1);
      if (!last) return;
      for (const notification of received.splice(0)) this.sink.notification(instance.name, notification.data);
      this.position = { seq: last.seq, epoch: last.epoch };
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ type: 'ack', seq: last.seq }));
    };
    const onMessage = (text: string, socket: WebSocket) => {
      const message = parseV2(text);
      if (message?.type === 'notification') {
        received.push(message);
        // Never within the message event: the batch runs after the stream's opening has been seen through.
        if (received.length >= V2_BATCH) setImmediate(() => processBatch(socket));
        else timer ??= setTimeout(() => processBatch(socket), V2_BATCH_WAIT_MS);
      } else if (message?.type === 'reset') this.sink.reset(instance.name, message.reason);
      else if (message?.type !== 'expiring') this.sink.unreadable();
    };
    const { stream } = await openStream(log, 'subscriber', instance, token, { onMessage, protocol: 'voyage.v2', query });
    if (!stream) return undefined;
    if (stream.socket.protocol !== 'voyage.v2') this.sink.unreadable();
    void stream.closed.then(() => {
      clearTimeout(timer);
      received.length = 0;
    });
    return { closed: stream.closed, terminate: () => stream.socket.terminate() };
  }
}

/** A v2 message, or undefined when it is not one. */
function parseV2(text: string): (V2Notification & { type: 'notification' }) | { type: 'reset'; reason: string } | { type: 'expiring' } | undefined {
  let message: { type?: unknown; seq?: unknown; epoch?: unknown; data?: unknown; reason?: unknown };
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (message.type === 'notification' && Number.isSafeInteger(message.seq) && typeof message.epoch === 'string' && typeof message.data === 'object') {
    return { type: 'notification', seq: message.seq as number, epoch: message.epoch, data: message.data };
  }
  if (message.type === 'reset' && typeof message.reason === 'string') return { type: 'reset', reason: message.reason };
  if (message.type === 'expiring') return { type: 'expiring' };
  return undefined;
}

class EventStreamReader implements StreamReader {
  readonly kind = 'sse';
  /** The id of the last notification processed: the next connection's `Last-Event-ID`. */
  private lastEventId?: string;

  constructor(private readonly sink: ReadSink) {}

  async open(log: AttemptLog, instance: Instance, token: string): Promise<ReaderStream | undefined> {
    const { stream } = await openEventStream(log, 'subscriber', instance, token, {
      lastEventId: this.lastEventId,
      events: ['notification', 'reset'],
      onEvent: (type, data, id) => {
        if (type === 'reset') return this.sink.reset(instance.name, data);
        this.sink.notification(instance.name, data);
        this.lastEventId = id;
      },
    });
    return stream && { closed: stream.closed, terminate: () => stream.close() };
  }
}
