import type WebSocket from 'ws';
import type { Credentials } from './clients.js';
import type { Instance } from './instances.js';
import { type AttemptLog, openStream, requestToken } from './requests.js';

/** One message as a subscriber received it. */
export interface Arrival {
  recipient: string;
  /** The subscriber (one logical client connection, reconnected over and over) that got it. */
  subscriber: number;
  /** `correlationId/status`: what the service deduplicates on. */
  key: string;
  instance: string;
  at: number;
  /** Global arrival order in this process (ties of `at` are common). */
  order: number;
}

/** Every message every subscriber received. */
export class Mailbox {
  readonly arrivals: Arrival[] = [];
  /** Text frames that were not JSON with a correlationId and a status. */
  unreadable = 0;
  private readonly received = new Map<string, Set<string>>();

  record(recipient: string, subscriber: number, instance: string, text: string) {
    let message: { correlationId?: unknown; status?: unknown };
    try {
      message = JSON.parse(text);
    } catch {
      this.unreadable++;
      return;
    }
    if (typeof message.correlationId !== 'string' || typeof message.status !== 'string') {
      this.unreadable++;
      return;
    }
    const key = `${message.correlationId}/${message.status}`;
    this.arrivals.push({ recipient, subscriber, key, instance, at: Date.now(), order: this.arrivals.length });
    let keys = this.received.get(recipient);
    if (!keys) this.received.set(recipient, (keys = new Set()));
    keys.add(key);
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
 * A subscriber like a client of the notification service should (examples/notification-subscriber.ts): a fresh
 * token before every connection, every text message recorded, and after a close a reconnect after
 * the delay plus jitter. It starts at its preferred instance; when a token request or an upgrade
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
  private socket: WebSocket | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  private running: Promise<void> | undefined;

  constructor(
    readonly client: Credentials,
    private readonly instances: Instance[],
    private preferred: number,
    private readonly delay: ReconnectDelay,
    private readonly log: AttemptLog,
    private readonly mailbox: Mailbox,
  ) {}

  start() {
    this.running ??= this.loop();
  }

  /** Closes the stream and ends the loop. */
  async stop() {
    this.stopped = true;
    this.wake?.();
    this.socket?.terminate();
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
    const { stream } = await openStream(this.log, 'subscriber', instance, token, (text) => this.mailbox.record(this.client.id, this.id, instance.name, text));
    if (!stream) return false;
    if (this.stopped) {
      stream.socket.terminate();
      return true;
    }
    this.socket = stream.socket;
    this.openOn = instance.name;
    this.opens.push({ instance: instance.name, at: Date.now() });
    const code = await stream.closed;
    this.openOn = undefined;
    this.socket = undefined;
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
