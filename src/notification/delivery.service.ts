import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { WebSocket } from 'ws';
import { Batcher } from '../common/batching/batcher.js';
import { Env } from '../config/env.js';
import { Metrics } from '../metrics/metrics.service.js';
import { NotificationsRepository, type ReadAfter, type StoredNotification } from './notifications.repository.js';

/** How many stored notifications one read fetches for a recipient (replay and live alike). */
const BATCH = 500;
/** How many recipients' reads share one query. */
const READS_PER_QUERY = 1_000;
/** How long a connection whose buffer is full may take to drain before it counts as slow. */
const DRAIN_DEADLINE_MS = 5_000;
const DRAIN_POLL_MS = 20;
/** Wait before reading again after a failed read. */
const RETRY_MS = 1_000;
/** How often confirmed deliveries are written back as cursors. */
const CURSOR_FLUSH_MS = 250;

/** Close code for a client that does not read fast enough (RFC 6455 §7.4.1: try again later). */
export const SLOW_CONSUMER_CLOSE = 1013;

/** One open stream of a recipient, and how far it has been sent. */
export interface Subscriber {
  clientId: string;
  socket: WebSocket;
  sentSeq: number;
}

interface Recipient {
  subscribers: Set<Subscriber>;
  /** The running pump, and whether it must run once more because something arrived meanwhile. */
  pumping?: Promise<void>;
  again: boolean;
}

/**
 * Pushes each recipient's notifications to its live connections on this instance, in publish
 * order. Replay on connect and live delivery are the same loop: read what is newer than what
 * each connection was sent, send it, repeat until nothing is left. The table is the truth, so a
 * missed wake-up is healed by the next read.
 */
@Injectable()
export class DeliveryService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(DeliveryService.name);
  private readonly recipients = new Map<string, Recipient>();
  /** Highest seq the recipient is known to have read (a pong answered it), not yet written back. */
  private readonly confirmed = new Map<string, number>();
  private flushTimer?: NodeJS.Timeout;
  /** A burst of publishes wakes many recipients at once (and a restart reconnects many): their reads share round trips. */
  private readonly reads: Batcher<ReadAfter, StoredNotification[]>;
  private readonly cursors: Batcher<string, number>;

  constructor(
    private readonly notifications: NotificationsRepository,
    private readonly env: Env,
    private readonly metrics: Metrics,
  ) {
    this.reads = new Batcher((requests) => notifications.after(requests), READS_PER_QUERY);
    this.cursors = new Batcher((recipients) => notifications.deliveredSeqs(recipients), READS_PER_QUERY);
  }

  onModuleInit() {
    this.flushTimer = setInterval(() => void this.flush(), CURSOR_FLUSH_MS).unref();
  }

  async onApplicationShutdown() {
    clearInterval(this.flushTimer);
    await this.flush();
  }

  /** Starts a connection where the recipient's last confirmed delivery left off. */
  async subscribe(clientId: string, socket: WebSocket): Promise<Subscriber> {
    // Read the unsaved confirmation before the stored cursor too: a flush that completes while the
    // cursor is read deletes it from `confirmed`, and the read may not see what that flush saved.
    const unsaved = this.confirmed.get(clientId) ?? 0;
    const stored = await this.cursors.submit(clientId);
    const sentSeq = Math.max(stored, unsaved, this.confirmed.get(clientId) ?? 0);
    const subscriber: Subscriber = { clientId, socket, sentSeq };
    // Delivery pings carry a seq; the heartbeat's pings carry nothing.
    socket.on('pong', (data: Buffer) => {
      const seq = Number(data.toString());
      if (seq > 0) this.confirm(clientId, seq);
    });
    const recipient = this.recipients.get(clientId) ?? { subscribers: new Set(), again: false };
    recipient.subscribers.add(subscriber);
    this.recipients.set(clientId, recipient);
    this.wake(clientId);
    return subscriber;
  }

  unsubscribe(subscriber: Subscriber): void {
    const recipient = this.recipients.get(subscriber.clientId);
    recipient?.subscribers.delete(subscriber);
    if (recipient && recipient.subscribers.size === 0 && !recipient.pumping) this.recipients.delete(subscriber.clientId);
  }

  /** Something may be new for this recipient (a publish, or a catch-up after a lost wake-up). */
  wake(clientId: string): void {
    const recipient = this.recipients.get(clientId);
    if (!recipient) return;
    if (recipient.pumping) {
      recipient.again = true;
      return;
    }
    recipient.pumping = this.pump(clientId, recipient)
      .catch((error) => {
        // A failed read (database away) is retried; the listener's catch-up covers longer outages.
        this.logger.warn(`delivery to ${clientId} paused: ${(error as Error).message}`);
        setTimeout(() => this.wake(clientId), RETRY_MS).unref();
      })
      .finally(() => {
        recipient.pumping = undefined;
        if (recipient.again) {
          recipient.again = false;
          this.wake(clientId);
        } else if (recipient.subscribers.size === 0) this.recipients.delete(clientId);
      });
  }

  /** Every recipient with a connection here: after the listener reconnects, nothing is assumed. */
  wakeAll(): void {
    for (const clientId of this.recipients.keys()) this.wake(clientId);
  }

  private async pump(clientId: string, recipient: Recipient): Promise<void> {
    for (;;) {
      const open = [...recipient.subscribers].filter(isOpen);
      if (open.length === 0) return;
      const from = open.reduce((lowest, subscriber) => Math.min(lowest, subscriber.sentSeq), Infinity);
      const batch = await this.reads.submit({ recipient: clientId, seq: from, limit: BATCH });
      if (batch.length === 0) return;
      for (const subscriber of open) await this.sendBatch(subscriber, batch);
      if (batch.length < BATCH) return;
    }
  }

  /**
   * Sends what the connection has not had yet, then a ping carrying the last seq: its pong
   * proves the client read everything before it, and only then does the cursor move. A
   * connection that dies with messages unread in TCP buffers gets them again on reconnect.
   */
  private async sendBatch(subscriber: Subscriber, batch: StoredNotification[]): Promise<void> {
    let last = 0;
    for (const notification of batch) {
      if (notification.seq <= subscriber.sentSeq) continue;
      if (!(await this.roomToSend(subscriber))) break;
      this.send(subscriber, notification);
      last = notification.seq;
    }
    if (last > 0 && isOpen(subscriber)) subscriber.socket.ping(String(last));
  }

  /**
   * Whether the connection can take another message: a burst (a replay) may fill its buffer, so
   * it gets DRAIN_DEADLINE_MS to drain below half the bound; a client that does not read by then
   * is closed and resumes from its cursor when it reconnects.
   */
  private async roomToSend(subscriber: Subscriber): Promise<boolean> {
    const { socket } = subscriber;
    if (socket.bufferedAmount <= this.env.WS_MAX_BUFFERED_BYTES) return isOpen(subscriber);
    const deadline = Date.now() + DRAIN_DEADLINE_MS;
    while (isOpen(subscriber) && socket.bufferedAmount > this.env.WS_MAX_BUFFERED_BYTES / 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    }
    if (!isOpen(subscriber)) return false;
    if (socket.bufferedAmount <= this.env.WS_MAX_BUFFERED_BYTES / 2) return true;
    socket.close(SLOW_CONSUMER_CLOSE, 'too slow: reconnect to resume');
    return false;
  }

  private send(subscriber: Subscriber, { seq, payload, storedAt }: StoredNotification): void {
    subscriber.sentSeq = seq;
    subscriber.socket.send(payload, (error) => {
      if (error) return;
      this.metrics.notificationsDelivered.inc();
      this.metrics.publishToPush.observe((Date.now() - storedAt) / 1000);
    });
  }

  /** The client answered a delivery ping: everything up to `seq` was read. */
  private confirm(clientId: string, seq: number): void {
    if (seq > (this.confirmed.get(clientId) ?? 0)) this.confirmed.set(clientId, seq);
  }

  /** Writes confirmed deliveries back as cursors (also called once the stream's sockets are closed). */
  async flush(): Promise<void> {
    if (this.confirmed.size === 0) return;
    const batch = new Map(this.confirmed);
    try {
      await this.notifications.saveDeliveredSeqs(batch);
      for (const [clientId, seq] of batch) if (this.confirmed.get(clientId) === seq) this.confirmed.delete(clientId);
    } catch (error) {
      this.logger.warn(`could not save delivery cursors: ${(error as Error).message}`);
    }
  }
}

const isOpen = (subscriber: Subscriber) => subscriber.socket.readyState === subscriber.socket.OPEN;
