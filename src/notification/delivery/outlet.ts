import type { StoredNotification } from './delivery.repository.js';

/** Why a resuming connection is told that what it missed is no longer complete. */
export type ResetReason = 'retention' | 'epoch';

/**
 * Where one connection's notifications go, as the delivery core sees it: a WebSocket speaking
 * the seed's protocol (v1) or protocol v2, or a server-sent event stream. The core decides what
 * to send and when; an outlet only knows how it looks on the wire and how the client confirms.
 */
export interface Outlet {
  readonly isOpen: boolean;
  /** Bytes written and not yet taken by the network: the slow-consumer bound. */
  readonly bufferedBytes: number;
  /**
   * How the client confirms what it read: by answering the ping that ends each burst (v1), by
   * acknowledging seqs (v2), or only when it resumes with the last id it saw (SSE).
   */
  readonly confirms: 'ping' | 'ack' | 'on-resume';
  /** The messages of one burst leave in one write. */
  cork(): void;
  uncork(): void;
  /** `delivered` runs once the message is handed to the network. */
  send(notification: StoredNotification, delivered: () => void): void;
  /** After a burst, up to `lastSeq`: a ping carrying it, for outlets that confirm by ping. */
  burstSent(lastSeq: number): void;
  /**
   * Before anything is sent: the database's epoch (for a resuming client), and whether the
   * history the client counted on is incomplete (v1 cannot say it).
   */
  begin(start: { epoch?: string; reset?: ResetReason }): void;
  /** The client did not read fast enough: it reconnects and resumes. */
  closeSlow(): void;
}
