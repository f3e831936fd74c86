import type { Ending } from './reconnect-policy.js';

/** A notification as the service pushes it: the seed's fields. */
export type Notification = Record<string, unknown>;

/** What the loop over a Subscriber yields. */
export type Delivery =
  /** `seq` is absent on the original (v1) stream. */
  | { seq?: number; notification: Notification }
  /** What was missed is incomplete (expired by retention, or another database): resynchronise. */
  | { reset: 'retention' | 'epoch' };

/** Where the device is in its stream: the last notification it handled. */
export interface Position {
  seq: number;
  /** The service's database it came from (protocol v2 says; SSE does not). */
  epoch?: string;
}

/** A delivery, and how to confirm it on the connection that brought it once it was handled. */
export interface Arrival {
  delivery: Delivery;
  position?: Position;
  confirm?: () => void;
}

/** What a connection needs from its subscriber. */
export interface ConnectionContext {
  api: string;
  token: string;
  position: Position | undefined;
  /** A silent connection (no message, ping or comment) is given up after this. */
  silenceMs: number;
  arrive(arrival: Arrival): void;
  opened(): void;
  /** A fresh token for protocol v2's in-band replacement. */
  renewToken(): Promise<string>;
}

/** One connection attempt: it ends once, with how. */
export interface Connection {
  readonly ended: Promise<Ending>;
  close(): void;
}
