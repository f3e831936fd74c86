import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { CloseCode } from './close-codes.js';
import type { StoredNotification } from '../delivery/delivery.repository.js';
import type { Outlet, ResetReason } from '../delivery/outlet.js';
import type { StreamTransport } from './stream-transport.js';

/** The WebSocket subprotocol of protocol v2. */
export const PROTOCOL_V2 = 'voyage.v2';

/** A stream over a WebSocket: its lifecycle and its outlet are the socket's. */
abstract class WebSocketStream implements StreamTransport, Outlet {
  abstract readonly confirms: Outlet['confirms'];
  readonly pongs = true;

  constructor(readonly socket: WebSocket) {}

  get isOpen(): boolean {
    return this.socket.readyState === this.socket.OPEN;
  }

  get bufferedBytes(): number {
    return this.socket.bufferedAmount;
  }

  /** The TCP socket under ws: a burst corked there leaves in one write (ws writes every frame on its own). */
  private get wire(): Socket | undefined {
    return (this.socket as unknown as { _socket?: Socket })._socket;
  }

  cork(): void {
    this.wire?.cork();
  }

  uncork(): void {
    this.wire?.uncork();
  }

  close(code: number, reason: string): void {
    this.socket.close(code, reason);
  }

  terminate(): void {
    this.socket.terminate();
  }

  ping(): void {
    this.socket.ping();
  }

  closeSlow(): void {
    this.socket.close(CloseCode.TRY_AGAIN_LATER, 'too slow: reconnect to resume');
  }

  whenEnded(listener: () => void): void {
    if (this.socket.readyState === this.socket.CLOSED) listener();
    // `on`, not `once`: ws emits 'close' once, and `once` would add a wrapper to every idle connection.
    else this.socket.on('close', listener);
  }

  abstract begin(start: { epoch?: string; reset?: ResetReason }): void;
  abstract send(notification: StoredNotification, delivered: () => void): void;
  abstract burstSent(lastSeq: number): void;

  protected write(message: string, delivered?: () => void): void {
    this.socket.send(message, (error) => {
      if (!error) delivered?.();
    });
  }
}

/**
 * The seed's stream, byte for byte: each notification is its stored JSON, and a burst ends with
 * a ping carrying its last seq, which every WebSocket library's pong confirms.
 */
export class SeedWebSocketStream extends WebSocketStream {
  readonly confirms = 'ping';

  begin(): void {}

  send(notification: StoredNotification, delivered: () => void): void {
    this.write(notification.payload, delivered);
  }

  burstSent(lastSeq: number): void {
    this.socket.ping(String(lastSeq));
  }
}

/**
 * Protocol v2 (subprotocol `voyage.v2`): every message a JSON object with `type`. Notifications
 * carry their `seq` and the database's `epoch`, and the client acks seqs; a reset, and the
 * token's coming expiry, are said in band.
 */
export class V2WebSocketStream extends WebSocketStream {
  readonly confirms = 'ack';
  private epochJson = '""';

  begin({ epoch, reset }: { epoch?: string; reset?: ResetReason }): void {
    this.epochJson = JSON.stringify(epoch ?? '');
    if (reset && this.isOpen) this.write(JSON.stringify({ type: 'reset', reason: reset }));
  }

  send({ seq, payload }: StoredNotification, delivered: () => void): void {
    // The stored payload is already JSON: wrapped, not parsed and serialised again.
    this.write(`{"type":"notification","seq":${seq},"epoch":${this.epochJson},"data":${payload}}`, delivered);
  }

  burstSent(): void {}

  /** The token expires in `seconds`: a client that replaces it in time is never closed with 4003. */
  expiring(seconds: number): void {
    if (this.isOpen) this.write(JSON.stringify({ type: 'expiring', in: seconds }));
  }
}
