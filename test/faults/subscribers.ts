import type { Credentials } from './clients.js';
import type { Instance } from './instances.js';
import { type AttemptLog, requestToken } from './requests.js';
import { createReader, type ReaderStream, type StreamReader, type SubscriberKind } from './stream-kinds.js';

/** One message as a subscriber received it. */
export interface Arrival {
  recipient: string;
  /** The subscriber (one logical client connection, reconnected over and over) that got it. */
  subscriber: number;
  kind: SubscriberKind;
  /** `correlationId/status`: what the service deduplicates on. */
  key: string;
  instance: string;
  at: number;
  /** Global arrival order in this process (ties of `at` are common). */
  order: number;
}

/** Who received a message: the subscriber, its client and kind, and the instance its stream was on. */
export type ArrivalSource = Pick<Arrival, 'recipient' | 'subscriber' | 'kind' | 'instance'>;

/** A `reset` the service sent: the subscriber was told its history is incomplete. */
export interface Reset {
  subscriber: number;
  kind: SubscriberKind;
  instance: string;
  reason: string;
  at: number;
}

/** Every message every subscriber received. */
export class Mailbox {
  readonly arrivals: Arrival[] = [];
  readonly resets: Reset[] = [];
  /** Messages that were not notifications with a correlationId and a status (nor another message of their protocol). */
  unreadable = 0;
  private readonly received = new Map<string, Set<string>>();

  /** A notification as JSON text (the seed's stream, an event's data). */
  record(from: ArrivalSource, text: string) {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.unreadable++;
      return;
    }
    this.recordMessage(from, message);
  }

  /** A notification already parsed (a v2 message's `data`). */
  recordMessage(from: ArrivalSource, message: unknown) {
    const { correlationId, status } = (message ?? {}) as { correlationId?: unknown; status?: unknown };
    if (typeof correlationId !== 'string' || typeof status !== 'string') {
      this.unreadable++;
      return;
    }
    const key = `${correlationId}/${status}`;
    this.arrivals.push({ ...from, key, at: Date.now(), order: this.arrivals.length });
    let keys = this.received.get(from.recipient);
    if (!keys) this.received.set(from.recipient, (keys = new Set()));
    keys.add(key);
  }

  reset(from: ArrivalSource, reason: string) {
    this.resets.push({ subscriber: from.subscriber, kind: from.kind, instance: from.instance, reason, at: Date.now() });
  }

  /** Whether `recipient` got `key` at least once (on any of its connections). */
  has(recipient: string, key: string): boolean {
    return this.received.get(recipient)?.has(key) ?? false;
  }
}

export interface ReconnectDelay {
  baseMs: number;
  jitterMs: number;
}

/** A close the subscriber saw on an open stream. */
export interface Close {
  code: number;
  instance: string;
  at: number;
}

let nextSubscriberId = 0;

/**
 * A subscriber like a client of the notification service should (as the device SDK does): a fresh
 * token before every connection, every notification recorded, and after a close a reconnect after
 * the delay plus jitter, resuming as its kind does (stream-kinds.ts). It starts at its preferred instance; when a token request or an upgrade
 * there fails it tries the next instance at once (the way a load balancer would route around a
 * dead instance), and only when all fail does it wait the delay.
 */
export class Subscriber {
  readonly id = nextSubscriberId++;
  readonly closes: Close[] = [];
  /** When each stream opened, and where. */
  readonly opens: { instance: string; at: number }[] = [];
  /** Name of the instance whose stream is open now, if any. */
  openOn: string | undefined;
  private readonly reader: StreamReader;
  private stream: ReaderStream | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  private running: Promise<void> | undefined;

  constructor(
    readonly client: Credentials,
    private readonly instances: Instance[],
    private preferred: number,
    private readonly delay: ReconnectDelay,
    private readonly log: AttemptLog,
    mailbox: Mailbox,
    readonly kind: SubscriberKind = 'v1',
  ) {
    const from = (instance: string): ArrivalSource => ({ recipient: client.id, subscriber: this.id, kind, instance });
    this.reader = createReader(kind, {
      notification: (instance, message) => (typeof message === 'string' ? mailbox.record(from(instance), message) : mailbox.recordMessage(from(instance), message)),
      reset: (instance, reason) => mailbox.reset(from(instance), reason),
      unreadable: () => mailbox.unreadable++,
    });
  }

  start() {
    this.running ??= this.loop();
  }

  /** Closes the stream and ends the loop. */
  async stop() {
    this.stopped = true;
    this.wake?.();
    this.stream?.terminate();
    await this.running;
  }

  private async loop() {
    while (!this.stopped) {
      for (let tried = 0; tried < this.instances.length && !this.stopped; tried++) {
        const index = (this.preferred + tried) % this.instances.length;
        if (await this.connectAndRead(this.instances[index])) {
          this.preferred = index;
          break;
        }
      }
      await this.sleep(this.delay.baseMs + Math.random() * this.delay.jitterMs);
    }
  }

  /** One connection, read until it closes. False when it could not be opened. */
  private async connectAndRead(instance: Instance): Promise<boolean> {
    const { token } = await requestToken(this.log, 'subscriber', instance, this.client);
    if (!token || this.stopped) return false;
    const stream = await this.reader.open(this.log, instance, token);
    if (!stream) return false;
    if (this.stopped) {
      stream.terminate();
      return true;
    }
    this.stream = stream;
    this.openOn = instance.name;
    this.opens.push({ instance: instance.name, at: Date.now() });
    const code = await stream.closed;
    this.openOn = undefined;
    this.stream = undefined;
    if (!this.stopped) this.closes.push({ code, instance: instance.name, at: Date.now() });
    return true;
  }

  private sleep(ms: number) {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
