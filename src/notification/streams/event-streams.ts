import type { ServerResponse } from 'node:http';
import type { Writable } from 'node:stream';
import { constants as zlib, createGzip, type Gzip } from 'node:zlib';
import { CloseCode } from './close-codes.js';
import type { StoredNotification } from '../delivery/delivery.repository.js';
import type { Outlet, ResetReason } from '../delivery/outlet.js';
import type { StreamTransport } from './stream-transport.js';

/** The response headers of an event stream: never cached, never buffered by a proxy (nginx reads X-Accel-Buffering). */
export const EVENT_STREAM_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
} as const;

/** The events a closing stream is ended with, by close code: the ones a client acts on. */
const CLOSING_EVENTS: Partial<Record<number, string>> = {
  [CloseCode.TOKEN_EXPIRED]: 'token-expired',
  [CloseCode.GOING_AWAY]: 'shutdown',
};

/**
 * How an event stream's gzip follows WS_COMPRESSION: `each-event` (`on`) compresses every event
 * on its own, `context-takeover` lets an event refer back to the ones before it; with `off`, or a
 * client that does not accept gzip, the stream is not compressed.
 */
export type EventStreamGzip = 'each-event' | 'context-takeover';

export interface EventStreamOptions {
  gzip?: EventStreamGzip;
  /** Once the stream is ended, how long the client has to take what is left before its socket is destroyed (WS_CLOSE_TIMEOUT_MS). */
  closeTimeoutMs: number;
}

/**
 * A notification stream as server-sent events (HTML Living Standard §9.2), for networks that
 * refuse WebSocket: each notification is `id: SEQ`, `event: notification`, `data: {the seed's
 * fields}`. The client confirms only when it resumes (`Last-Event-ID`), so nothing it was sent
 * counts as read before then. With gzip, every event (`each-event`) or every burst
 * (`context-takeover`) is flushed as it ends, so compression never holds a notification back.
 *
 * An ended stream whose client does not take the rest (a reader that keeps TCP open and never
 * reads) is destroyed after `closeTimeoutMs`, as ws's close timer cuts a WebSocket: until then
 * it would hold its connection slot and its buffers.
 */
export class EventStream implements StreamTransport, Outlet {
  readonly confirms = 'on-resume';
  readonly pongs = false;
  private ended = false;
  private cut?: NodeJS.Timeout;

  private constructor(
    private readonly response: ServerResponse,
    private readonly out: Writable,
    private readonly closeTimeoutMs: number,
    private readonly gzip?: { compressor: Gzip; mode: EventStreamGzip },
  ) {
    response.once('close', () => {
      clearTimeout(this.cut);
      gzip?.compressor.destroy();
    });
  }

  /** Starts the response (200 and the headers); gzip when `options.gzip` says how. */
  static start(response: ServerResponse, { gzip, closeTimeoutMs }: EventStreamOptions): EventStream {
    response.writeHead(200, { ...EVENT_STREAM_HEADERS, ...(gzip && { 'Content-Encoding': 'gzip', Vary: 'Accept-Encoding' }) });
    if (!gzip) return new EventStream(response, response, closeTimeoutMs);
    // One gzip member for the stream. A 1 KiB window holds a notification and, with context
    // takeover, the one before it; with a small hash table and output buffer, zlib's formula
    // (zconf.h) gives about 13 KiB per stream.
    const compressor = createGzip({ windowBits: 10, memLevel: 4, chunkSize: 1024 });
    compressor.pipe(response);
    compressor.on('error', () => response.destroy());
    return new EventStream(response, compressor, closeTimeoutMs, { compressor, mode: gzip });
  }

  get isOpen(): boolean {
    return !this.ended && !this.response.destroyed && this.response.writable;
  }

  get bufferedBytes(): number {
    return this.response.writableLength + (this.gzip?.compressor.writableLength ?? 0);
  }

  cork(): void {
    this.out.cork();
  }

  uncork(): void {
    this.out.uncork();
  }

  begin({ reset }: { epoch?: string; reset?: ResetReason }): void {
    if (reset) this.event('reset', JSON.stringify({ reason: reset }));
    // The status line and headers leave now, through proxies that wait for a first byte.
    this.write(': stream open\n\n');
    this.flush();
  }

  send({ seq, payload }: StoredNotification, delivered: () => void): void {
    this.write(`id: ${seq}\nevent: notification\ndata: ${payload}\n\n`, delivered);
  }

  burstSent(): void {
    this.flush();
  }

  /** A comment line: it keeps proxies from timing the stream out, and a write to a vanished client fails. */
  ping(): void {
    this.write(': keepalive\n\n');
    this.flush();
  }

  close(code: number, reason: string): void {
    if (!this.isOpen) return;
    const event = CLOSING_EVENTS[code];
    if (event) this.event(event, JSON.stringify({ reason }));
    this.ended = true;
    this.out.end();
    this.cut = setTimeout(() => this.response.destroy(), this.closeTimeoutMs);
  }

  closeSlow(): void {
    this.close(CloseCode.TRY_AGAIN_LATER, 'too slow: reconnect to resume');
  }

  terminate(): void {
    this.ended = true;
    this.response.destroy();
  }

  whenEnded(listener: () => void): void {
    // A client gone before the stream started: its response's close event is already past.
    if (this.response.destroyed || this.response.closed) listener();
    else this.response.once('close', () => listener());
  }

  private event(name: string, data: string): void {
    this.write(`event: ${name}\ndata: ${data}\n\n`);
    this.flush();
  }

  private write(text: string, written?: () => void): void {
    if (!this.isOpen) return;
    this.out.write(text, (error) => {
      if (!error) written?.();
    });
    // Without context takeover each event is compressed alone: a full flush sends it and resets
    // the dictionary, so what one publisher wrote never shapes the length of another's event.
    if (this.gzip?.mode === 'each-event') this.gzip.compressor.flush(zlib.Z_FULL_FLUSH);
  }

  /** With context takeover, gzip holds output until it has enough: a sync flush sends what was written so far. */
  private flush(): void {
    if (this.gzip?.mode === 'context-takeover' && this.isOpen) this.gzip.compressor.flush(zlib.Z_SYNC_FLUSH);
  }
}
