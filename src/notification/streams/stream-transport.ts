/**
 * A stream's connection as its lifecycle reaches it (capacity, token expiry, revocation,
 * heartbeat, shutdown), whatever carries it: a WebSocket, or a server-sent event stream.
 */
export interface StreamTransport {
  readonly isOpen: boolean;
  /** Ends the stream saying why, by a close code (CloseCode); an SSE stream names 4003 and 1001 as events. */
  close(code: number, reason: string): void;
  /** Ends it at once: a client that stopped answering. */
  terminate(): void;
  /** The heartbeat: a ping, whose pong marks the connection alive (`pongs`); or a comment line, which proves nothing until a write fails. */
  ping(): void;
  /** Whether the client answers pings: one that missed its pong is gone. */
  readonly pongs: boolean;
  /** Runs `listener` once when the connection's socket has ended: at once if it already has (its own close event is then past). */
  whenEnded(listener: () => void): void;
}
