import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Arrival, Connection, ConnectionContext, Delivery, Position } from './connection.js';
import { Forbidden, InvalidClient, RequestRefused, SignInRequired } from './errors.js';
import { nextAttempt } from './reconnect-policy.js';
import { openEventStream } from './sse-connection.js';
import { MemoryStore, type Store } from './stores.js';
import type { TokenSource } from './tokens.js';
import { openWebSocket } from './websocket-connection.js';

export type Transport = 'auto' | 'v2' | 'sse' | 'v1';

export interface SubscriberOptions {
  /** The service's address, e.g. https://voyage.example. */
  api: string;
  /** Where each connection's token comes from: the client's own (ClientCredentials) or a user's. */
  tokens: TokenSource;
  /** `auto` (default): protocol v2, and server-sent events from then on when a proxy refuses WebSocket. */
  transport?: Transport;
  /** Keeps the position (key `position`) so a restart resumes without loss or repeats. */
  store?: Store;
  /** A connection that hears nothing (no message, ping or comment) for this long is replaced. Above the client's heartbeat (default 30 s). */
  silenceMs?: number;
}

export interface SubscriberEvents {
  connected: [{ transport: 'v1' | 'v2' | 'sse' }];
  reconnecting: [{ inMs: number; why: string }];
  /** A problem the subscriber works around by itself (it keeps going). */
  error: [Error];
}

const STORE_KEY = 'position';
const DEFAULT_SILENCE_MS = 90_000;

/**
 * The notification stream, for `for await (const delivery of subscriber)`. A notification is
 * confirmed (protocol v2's ack) and its position saved only once the loop's body for it returned:
 * a crash repeats at most the one being handled, and loses nothing. Connections are replaced by
 * the contract's rules (nextAttempt) until close(), or an error no retry mends (a wrong secret, a
 * missing scope, a user's sign-in that ended), which the loop throws.
 */
export class Subscriber extends EventEmitter<SubscriberEvents> implements AsyncIterable<Delivery> {
  private readonly store: Store;
  private readonly arrivals: Arrival[] = [];
  private wake: (() => void) | undefined;
  private position: Position | undefined;
  private connection: Connection | undefined;
  private running: Promise<void> | undefined;
  /** The delivery the caller's loop is handling: the next connection waits for its position. */
  private inHand: Promise<void> | undefined;
  private readonly stopping = new AbortController();
  private failure: Error | undefined;

  constructor(private readonly options: SubscriberOptions) {
    super();
    this.store = options.store ?? new MemoryStore();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Delivery> {
    this.running ??= this.run();
    try {
      for (;;) {
        const arrival = await this.nextArrival();
        if (!arrival) return;
        let done!: () => void;
        this.inHand = new Promise((resolve) => (done = resolve));
        try {
          yield arrival.delivery;
          // The body of the caller's loop returned: handled.
          await this.handled(arrival);
        } finally {
          done();
        }
      }
    } finally {
      await this.close();
    }
  }

  /** Ends the loop (after the delivery being handled) and the connection. */
  async close(): Promise<void> {
    this.stopping.abort();
    this.connection?.close();
    this.wake?.();
    await this.running;
  }

  private get closed(): boolean {
    return this.stopping.signal.aborted;
  }

  private async nextArrival(): Promise<Arrival | undefined> {
    for (;;) {
      const arrival = this.arrivals.shift();
      if (arrival) return arrival;
      if (this.failure) throw this.failure;
      if (this.closed) return undefined;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private async handled(arrival: Arrival): Promise<void> {
    if ('reset' in arrival.delivery && arrival.delivery.reset === 'epoch') {
      // A position in another database means nothing here: the service's cursor for the client takes over.
      this.position = undefined;
      await this.store.set(STORE_KEY, undefined);
    }
    if (!arrival.position) return;
    this.position = arrival.position;
    // Saved before it is confirmed: a crash in between repeats nothing after the restart.
    await this.store.set(STORE_KEY, this.position);
    arrival.confirm?.();
  }

  private async run(): Promise<void> {
    this.position ??= await this.store.get<Position>(STORE_KEY);
    let transport: 'v1' | 'v2' | 'sse' = this.options.transport === 'auto' || !this.options.transport ? 'v2' : this.options.transport;
    let failures = 0;
    let renew = false;
    while (!this.closed) {
      let token: string | undefined;
      try {
        // close() does not wait for a token request that is still retrying an unreachable service.
        token = await untilAborted(renew ? this.options.tokens.renew() : this.options.tokens.accessToken(), this.stopping.signal);
        if (token === undefined) return;
      } catch (error) {
        if (isFatal(error)) return this.fail(error as Error);
        const waitMs = Math.min(5_000 * 2 ** failures++, 60_000);
        this.tell('error', error as Error);
        this.tell('reconnecting', { inMs: waitMs, why: (error as Error).message });
        await this.pause(waitMs);
        continue;
      }
      await this.inHand;
      if (this.closed) return;
      let opened = false;
      const context: ConnectionContext = {
        api: this.options.api,
        token,
        position: transport === 'v1' ? undefined : this.position,
        silenceMs: this.options.silenceMs ?? DEFAULT_SILENCE_MS,
        arrive: (arrival) => {
          this.arrivals.push(arrival);
          this.wake?.();
        },
        opened: () => {
          opened = true;
          failures = 0;
          this.tell('connected', { transport });
        },
        renewToken: () => this.options.tokens.renew(),
      };
      this.connection = transport === 'sse' ? openEventStream(context) : openWebSocket(context, transport);
      const ending = await this.connection.ended;
      if (this.closed) return;
      // What arrived but was not handled is asked for again by the next connection (it resumes after the position handled last).
      if (transport !== 'v1') this.arrivals.splice(0).forEach((arrival) => 'reset' in arrival.delivery && this.arrivals.push(arrival));
      const next = nextAttempt(ending, opened ? 0 : failures, { canFallBack: this.options.transport === 'auto' || !this.options.transport ? transport === 'v2' : false });
      if (next.fatal) return this.fail(new Forbidden('subscribing'));
      if (next.fallBackToSse) transport = 'sse';
      if (!opened) failures++;
      renew = next.renewToken;
      this.tell('reconnecting', { inMs: Math.round(next.waitMs), why: next.why });
      await this.pause(next.waitMs);
    }
  }

  private fail(error: Error) {
    this.failure = error;
    this.stopping.abort();
    this.wake?.();
  }

  /** Waits `ms`, or less if close() comes first. */
  private async pause(ms: number) {
    await sleep(ms, undefined, { signal: this.stopping.signal }).catch(() => {});
  }

  private tell<K extends keyof SubscriberEvents>(event: K, ...args: SubscriberEvents[K]): void {
    // A problem worked around is news, not a crash: with nobody listening, it is dropped.
    if (event === 'error' && this.listenerCount('error') === 0) return;
    (this.emit as (event: string, ...args: unknown[]) => boolean)(event, ...args);
  }
}

/** What `promise` resolves to, or undefined as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const aborted = () => resolve(undefined);
    signal.addEventListener('abort', aborted, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', aborted));
  });
}

/** Errors no reconnect mends. */
const isFatal = (error: unknown) => error instanceof InvalidClient || error instanceof Forbidden || error instanceof SignInRequired || error instanceof RequestRefused;
