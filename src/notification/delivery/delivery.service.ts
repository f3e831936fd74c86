import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Batcher } from '../../common/batching/batcher.js';
import { Env } from '../../config/env.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { isDatabaseUnavailable } from '../../common/errors/database-unavailable.js';
import { CursorBook, type CursorSave, type Progress } from './cursor-book.js';
import { DeliveryRepository, type DeliveryStartRequest, type ReadAfter, type ResumeFacts, type ResumeFactsRequest, type StoredNotification } from './delivery.repository.js';
import type { Outlet, ResetReason } from './outlet.js';
import { wakeKey } from '../publish/wake-ups.js';

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
/** At most this many delivery pings wait for their pong per connection (a client that never answers cannot grow it). */
const MAX_AWAITING_PINGS = 256;
/** While cursor saves keep failing, one log line per this interval. */
const FAILURE_LOG_INTERVAL_MS = 30_000;

/** A delivery ping waiting for its pong: the last seq it covers, and when the first message it covers was stored. */
interface AwaitedPing {
  seq: number;
  firstStoredAt: number;
}

/** One open stream of a recipient: how far it was sent, and what it proved it read. */
export interface Subscriber extends Progress {
  clientId: string;
  outlet: Outlet;
  /** Bursts sent and not yet confirmed (outlets that confirm in the connection: by ping or ack). */
  awaiting: AwaitedPing[];
  /** With `owesHold`: the seq it had been sent when a read first found nothing more; confirming it settles the hold. */
  caughtUpSeq?: number;
}

interface Recipient {
  subscribers: Set<Subscriber>;
  /** What a publish's wake-up calls it (wake-ups.ts). */
  wakeKey: string;
  /** The running pump, and whether it must run once more because something arrived meanwhile. */
  pumping?: Promise<void>;
  again: boolean;
  /** Since when something may be waiting that no read has fetched yet (a wake-up, a failed read). */
  unreadSince?: number;
}

/** Where a client says it is (protocol v2, server-sent events): after this seq, in this database (its epoch). */
export interface ResumePosition {
  after?: number;
  epoch?: string;
}

/**
 * Pushes each recipient's notifications to its live connections on this instance, in publish
 * order. Replay on connect and live delivery are the same loop: read what is newer than what
 * each connection was sent, send it, repeat until nothing is left. The table is the truth, so a
 * missed wake-up is healed by the next read. What each connection proved it read moves the
 * client's cursor (see CursorBook for the rules).
 */
@Injectable()
export class DeliveryService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(DeliveryService.name);
  private readonly recipients = new Map<string, Recipient>();
  /** The recipients here by wake key: a transaction's wake-up names keys. */
  private readonly recipientsByWakeKey = new Map<string, Set<string>>();
  private readonly cursors = new CursorBook();
  private flushTimer?: NodeJS.Timeout;
  private flushing?: Promise<void>;
  private failingSince?: number;
  private failuresUnlogged = 0;
  private lastFailureLog = 0;
  /** A burst of publishes wakes many recipients at once (and a restart reconnects many): their reads share round trips. */
  private readonly reads: Batcher<ReadAfter, StoredNotification[]>;
  private readonly starts: Batcher<DeliveryStartRequest, { deliveredSeq: number; heldSeq?: number }>;
  private readonly resumes: Batcher<ResumeFactsRequest, ResumeFacts>;

  constructor(
    private readonly notifications: DeliveryRepository,
    private readonly env: Env,
    private readonly metrics: MetricsService,
  ) {
    this.reads = new Batcher((requests) => notifications.after(requests), READS_PER_QUERY);
    this.starts = new Batcher(
      (requests) => notifications.deliveryStarts(requests),
      READS_PER_QUERY,
    );
    this.resumes = new Batcher((requests) => notifications.resumeFacts(requests), READS_PER_QUERY);
  }

  onModuleInit() {
    this.flushTimer = setInterval(() => void this.flush(), CURSOR_FLUSH_MS).unref();
  }

  async onApplicationShutdown() {
    clearInterval(this.flushTimer);
    await this.flush();
  }

  /**
   * Starts a connection where the client's cursor (or a hold of an earlier connection) leaves
   * off; or, for a client that says where it is (`resume`, protocol v2 and server-sent events),
   * after its own position, which confirms everything up to it. A resuming outlet learns the
   * epoch and whether its history is complete: a position from another database (another epoch,
   * or a seq this one never had) starts from the cursor with a reset; one below what retention
   * deleted starts there with a reset.
   */
  async subscribe(clientId: string, outlet: Outlet, resume?: ResumePosition): Promise<Subscriber> {
    const openedAt = Date.now();
    // What this instance's connections confirmed before this one opened (saved or not yet), and an
    // unsaved hold, which this connection takes over.
    const local = this.cursors.claim(clientId);
    let startSeq: number;
    let cursorSeq: number;
    let facts: ResumeFacts | undefined;
    try {
      const stored = await this.starts.submit({ clientId, openedAt });
      cursorSeq = Math.max(stored.deliveredSeq, local.confirmedSeq);
      startSeq = Math.min(cursorSeq, stored.heldSeq ?? Infinity, local.heldSeq ?? Infinity);
      if (resume) facts = await this.resumes.submit({ clientId, fromSeq: resume.after ?? startSeq });
    } catch (error) {
      this.cursors.unclaim(clientId, local.heldSeq);
      throw error;
    }
    let reset: ResetReason | undefined;
    let owesHold = startSeq < cursorSeq;
    if (facts && resume) {
      const elsewhere = (resume.epoch !== undefined && resume.epoch !== facts.epoch) || (resume.after ?? 0) > facts.latestSeq;
      if (elsewhere) reset = 'epoch';
      else {
        if (facts.incomplete) reset = 'retention';
        // The client's own word: it has everything up to `after`, so the hold is settled.
        if (resume.after !== undefined) [startSeq, owesHold] = [resume.after, false];
      }
    }
    const subscriber: Subscriber = { clientId, outlet, sentSeq: startSeq, confirmedSeq: startSeq, awaiting: [], owesHold };
    outlet.begin({ epoch: facts?.epoch, reset });
    this.cursors.track(clientId, subscriber);
    const recipient = this.recipients.get(clientId) ?? this.addRecipient(clientId);
    recipient.subscribers.add(subscriber);
    this.wake(clientId);
    return subscriber;
  }

  unsubscribe(subscriber: Subscriber): void {
    this.cursors.closed(subscriber.clientId, subscriber);
    const recipient = this.recipients.get(subscriber.clientId);
    recipient?.subscribers.delete(subscriber);
    if (recipient && recipient.subscribers.size === 0 && !recipient.pumping) this.forget(subscriber.clientId, recipient);
  }

  private addRecipient(clientId: string): Recipient {
    const recipient: Recipient = { subscribers: new Set(), wakeKey: wakeKey(clientId), again: false };
    this.recipients.set(clientId, recipient);
    const sharing = this.recipientsByWakeKey.get(recipient.wakeKey);
    if (sharing) sharing.add(clientId);
    else this.recipientsByWakeKey.set(recipient.wakeKey, new Set([clientId]));
    return recipient;
  }

  private forget(clientId: string, recipient: Recipient): void {
    if (this.recipients.get(clientId) !== recipient) return;
    this.recipients.delete(clientId);
    const sharing = this.recipientsByWakeKey.get(recipient.wakeKey);
    sharing?.delete(clientId);
    if (sharing?.size === 0) this.recipientsByWakeKey.delete(recipient.wakeKey);
  }

  /** Something may be new for this recipient (a publish, or a catch-up after a lost wake-up). */
  wake(clientId: string): void {
    const recipient = this.recipients.get(clientId);
    if (!recipient) return;
    recipient.unreadSince ??= Date.now();
    if (recipient.pumping) {
      recipient.again = true;
      return;
    }
    recipient.pumping = this.pump(recipient)
      .catch((error) => {
        // A failed read (database away or busy) is retried; the listener's catch-up covers longer outages.
        this.logger.debug(`delivery to ${clientId} paused: ${(error as Error).message}`);
        setTimeout(() => this.wake(clientId), RETRY_MS).unref();
      })
      .finally(() => {
        recipient.pumping = undefined;
        if (recipient.again) {
          recipient.again = false;
          this.wake(clientId);
        } else if (recipient.subscribers.size === 0) this.forget(clientId, recipient);
      });
  }

  /** The recipients here that a transaction's wake-up names. */
  wakeByKeys(keys: string[]): void {
    for (const key of keys) {
      const sharing = this.recipientsByWakeKey.get(key);
      if (sharing) for (const clientId of sharing) this.wake(clientId);
    }
  }

  /** Every recipient with a connection here: after the listener reconnects (or while it is down), nothing is assumed. */
  wakeAll(): void {
    for (const clientId of this.recipients.keys()) this.wake(clientId);
  }

  private async pump(recipient: Recipient): Promise<void> {
    for (;;) {
      const open = [...recipient.subscribers].filter(isOpen);
      if (open.length === 0) return;
      const clientId = open[0].clientId;
      const from = open.reduce((lowest, subscriber) => Math.min(lowest, subscriber.sentSeq), Infinity);
      const readAt = Date.now();
      const batch = await this.reads.submit({ recipient: clientId, seq: from, limit: BATCH });
      // A read that found nothing sends nothing: each connection that opens wakes its client's
      // pump, which would otherwise walk all its connections (up to 100 each) through sendBatch.
      if (batch.length > 0) for (const subscriber of open) await this.sendBatch(subscriber, batch);
      if (batch.length < BATCH) {
        for (const subscriber of open) if (subscriber.owesHold) this.caughtUp(subscriber);
        // Caught up with everything stored before this read began.
        if (recipient.unreadSince !== undefined && recipient.unreadSince <= readAt) recipient.unreadSince = undefined;
        return;
      }
    }
  }

  /**
   * Sends what the connection has not had yet, then asks it to confirm the burst (v1: a ping
   * carrying the last seq, whose pong proves the client read everything before it; v2: its ack).
   * Only a confirmation moves the cursor: a connection that dies with messages unread in TCP
   * buffers gets them again on reconnect.
   */
  private async sendBatch(subscriber: Subscriber, batch: StoredNotification[]): Promise<void> {
    const { outlet } = subscriber;
    // The burst and its ping leave in one write: ws writes every frame on its own, and on a busy
    // instance those writes were a quarter of the CPU.
    outlet.cork();
    try {
      let last = 0;
      let firstStoredAt = 0;
      for (const notification of batch) {
        if (notification.seq <= subscriber.sentSeq) continue;
        if (!outlet.isOpen) break;
        if (outlet.bufferedBytes > this.env.WS_MAX_BUFFERED_BYTES) {
          outlet.uncork(); // what waits must be able to drain
          const room = await this.roomToSend(subscriber);
          outlet.cork();
          if (!room) break;
        }
        this.send(subscriber, notification);
        last = notification.seq;
        firstStoredAt ||= notification.storedAt;
      }
      if (last > 0 && outlet.isOpen) {
        if (outlet.confirms !== 'on-resume') this.await(subscriber, { seq: last, firstStoredAt });
        outlet.burstSent(last);
      }
    } finally {
      outlet.uncork();
    }
  }

  private await(subscriber: Subscriber, ping: AwaitedPing): void {
    const { awaiting } = subscriber;
    awaiting.push(ping);
    if (awaiting.length > MAX_AWAITING_PINGS) {
      // The oldest is forgotten, but not how old the oldest unconfirmed message is.
      awaiting[1].firstStoredAt = awaiting[0].firstStoredAt;
      awaiting.shift();
    }
  }

  /**
   * Whether the connection can take another message: a burst (a replay) may fill its buffer, so
   * it gets DRAIN_DEADLINE_MS to drain below half the bound; a client that does not read by then
   * is closed and resumes from its cursor when it reconnects.
   */
  private async roomToSend({ outlet }: Subscriber): Promise<boolean> {
    if (outlet.bufferedBytes <= this.env.WS_MAX_BUFFERED_BYTES) return outlet.isOpen;
    const deadline = Date.now() + DRAIN_DEADLINE_MS;
    while (outlet.isOpen && outlet.bufferedBytes > this.env.WS_MAX_BUFFERED_BYTES / 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    }
    if (!outlet.isOpen) return false;
    if (outlet.bufferedBytes <= this.env.WS_MAX_BUFFERED_BYTES / 2) return true;
    outlet.closeSlow();
    return false;
  }

  private send(subscriber: Subscriber, notification: StoredNotification): void {
    subscriber.sentSeq = notification.seq;
    subscriber.outlet.send(notification, () => {
      this.metrics.notificationsDelivered.inc();
      this.metrics.publishToPush.observe((Date.now() - notification.storedAt) / 1000);
    });
  }

  /**
   * A v1 pong is the client's word, so it counts only when it echoes exactly a delivery ping
   * this connection was sent and has not answered yet; anything else (a heartbeat pong, a forged
   * or repeated value) is ignored.
   */
  confirmPing(subscriber: Subscriber, data: Buffer): void {
    const seq = parseSeq(data);
    if (seq !== undefined && subscriber.awaiting.some((ping) => ping.seq === seq)) this.confirm(subscriber, seq);
  }

  /**
   * A v2 ack confirms `seq` and everything before it on this connection, but never more than
   * the connection was sent: an ack of something unsent, or of less than it already confirmed,
   * changes nothing.
   */
  acknowledge(subscriber: Subscriber, seq: number): void {
    if (Number.isSafeInteger(seq) && seq > subscriber.confirmedSeq && seq <= subscriber.sentSeq) this.confirm(subscriber, seq);
  }

  private confirm(subscriber: Subscriber, seq: number): void {
    const { awaiting } = subscriber;
    let answered = 0;
    while (answered < awaiting.length && awaiting[answered].seq <= seq) answered++;
    // A burst confirmed only in part still holds its first message's age (the health of delivery).
    awaiting.splice(0, answered);
    subscriber.confirmedSeq = seq;
    if (subscriber.caughtUpSeq !== undefined && seq >= subscriber.caughtUpSeq) subscriber.owesHold = false;
  }

  /** A connection that took over a hold was sent everything there was: once it confirms that, the hold is settled. */
  private caughtUp(subscriber: Subscriber): void {
    subscriber.caughtUpSeq ??= subscriber.sentSeq;
    if (subscriber.confirmedSeq >= subscriber.caughtUpSeq) subscriber.owesHold = false;
  }

  /**
   * Writes confirmed deliveries and holds back as cursors (also called once the stream's sockets
   * are closed). One save at a time: a slow database delays cursors, it never piles up connections.
   */
  flush(): Promise<void> {
    this.flushing ??= this.saveCursors().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async saveCursors(): Promise<void> {
    const saves = this.cursors.pending();
    if (saves.length === 0) return;
    try {
      await this.notifications.saveCursors(saves);
      this.cursors.saved(saves);
      this.savedAgain();
    } catch (error) {
      this.metrics.cursorFlushFailures.inc();
      if (isDatabaseUnavailable(error) || saves.length === 1) this.saveFailed(error as Error);
      else await this.saveOneByOne(saves);
    }
  }

  /** A row PostgreSQL refuses (say, a client deleted in the same instant) must not keep the others from being saved. */
  private async saveOneByOne(saves: CursorSave[]): Promise<void> {
    for (const save of saves) {
      try {
        await this.notifications.saveCursors([save]);
      } catch (error) {
        if (isDatabaseUnavailable(error)) return this.saveFailed(error as Error);
        this.logger.warn(`dropped the delivery cursor of ${save.clientId}: ${(error as Error).message}`);
      }
      this.cursors.saved([save]);
    }
    this.savedAgain();
  }

  /** One line when saves start failing, then one per FAILURE_LOG_INTERVAL_MS with the count, and one when they work again. */
  private saveFailed(error: Error): void {
    const now = Date.now();
    this.failingSince ??= now;
    this.failuresUnlogged++;
    if (now - this.lastFailureLog < FAILURE_LOG_INTERVAL_MS) return;
    const repeated = this.failuresUnlogged > 1 ? ` (${this.failuresUnlogged} failed saves since the last report)` : '';
    this.logger.warn(`could not save delivery cursors, retrying: ${error.message}${repeated}`);
    this.lastFailureLog = now;
    this.failuresUnlogged = 0;
  }

  private savedAgain(): void {
    if (this.failingSince === undefined) return;
    this.logger.log(`delivery cursors saved again after ${((Date.now() - this.failingSince) / 1000).toFixed(1)} s of failures`);
    this.failingSince = undefined;
    this.failuresUnlogged = 0;
    this.lastFailureLog = 0;
  }

  /** In milliseconds: a message sent and not confirmed, or something woken that no read has fetched yet. */
  oldestUnconfirmedAgeMs(): number {
    const now = Date.now();
    let oldest = now;
    for (const recipient of this.recipients.values()) {
      if (recipient.unreadSince !== undefined) oldest = Math.min(oldest, recipient.unreadSince);
      for (const subscriber of recipient.subscribers) if (subscriber.awaiting.length > 0) oldest = Math.min(oldest, subscriber.awaiting[0].firstStoredAt);
    }
    return now - oldest;
  }
}

const isOpen = (subscriber: Subscriber) => subscriber.outlet.isOpen;

/** A delivery ping's payload: a positive decimal integer, nothing else. */
function parseSeq(data: Buffer): number | undefined {
  if (data.length === 0 || data.length > 15) return undefined;
  const text = data.toString('latin1');
  return /^[1-9][0-9]*$/.test(text) ? Number(text) : undefined;
}
