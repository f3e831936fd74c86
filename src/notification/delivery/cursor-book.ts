/** How far one connection got: what it was sent, and what it proved it read (a pong to a delivery ping). */
export interface Progress {
  sentSeq: number;
  confirmedSeq: number;
  /** It started from a hold and has not yet confirmed catching up: until then it counts as unread. */
  owesHold?: boolean;
}

const unread = (progress: Progress) => progress.sentSeq > progress.confirmedSeq || progress.owesHold === true;

/** One client's cursor as the instance wants it stored: moved forward, and possibly held back for a connection that closed unread. */
export interface CursorSave {
  clientId: string;
  deliveredSeq: number;
  /** The lowest confirmation of a connection that closed with messages unconfirmed; the client's next connection starts there. */
  heldSeq: number | null;
}

/** What the instance knows of a client's cursor when one of its connections starts. */
export interface LocalStart {
  /** The cursor as this instance's connections had confirmed it so far (saved or not). */
  confirmedSeq: number;
  /** A hold this instance had not saved yet, now taken over by the new connection. */
  heldSeq?: number;
}

class ClientCursor {
  readonly live = new Set<Progress>();
  /** Highest confirmation of a connection that closed since the last save. */
  closedConfirmed = 0;
  /** Lowest confirmation of a connection that closed unread, not saved yet. */
  hold?: number;
  /** What the last save wrote; saves only move the cursor forward. */
  saved = 0;

  /**
   * The highest point every live connection has read up to: the best confirmation, unless a live
   * connection still has unconfirmed messages, which holds the cursor at its own confirmation (so
   * a crash of this instance cannot lose them).
   */
  target(): number {
    let best = Math.max(this.saved, this.closedConfirmed);
    let lagging = Infinity;
    for (const progress of this.live) {
      best = Math.max(best, progress.confirmedSeq);
      if (unread(progress)) lagging = Math.min(lagging, progress.confirmedSeq);
    }
    return Math.min(best, lagging);
  }

  get idle(): boolean {
    return this.live.size === 0 && this.hold === undefined && this.closedConfirmed <= this.saved;
  }
}

/**
 * The delivery cursors of the clients connected to this instance: one cursor per client, shared
 * by all its connections (a client id may be used by several devices). The semantics:
 *
 * - the cursor moves to what every live connection of the client has confirmed;
 * - a connection that closes with messages it was sent but never confirmed leaves a hold at its
 *   last confirmation: the client's next connection, on any instance, starts there and gets them
 *   again (and takes the hold over, so the one after it does not repeat them; it owes the hold
 *   until it has confirmed catching up, and leaves it again if it closes before);
 * - cursors are saved in batches (`pending` → write → `saved`) and only ever move forward.
 */
export class CursorBook {
  private readonly clients = new Map<string, ClientCursor>();

  /** A connection could not start after all: the hold it took over is the client's again. */
  unclaim(clientId: string, heldSeq: number | undefined): void {
    if (heldSeq === undefined) return;
    const cursor = this.cursor(clientId);
    cursor.hold = Math.min(cursor.hold ?? Infinity, heldSeq);
  }

  /** Called when a connection starts, before the stored cursor is read: takes over an unsaved hold. */
  claim(clientId: string): LocalStart {
    const cursor = this.clients.get(clientId);
    if (!cursor) return { confirmedSeq: 0 };
    const start: LocalStart = { confirmedSeq: cursor.target(), heldSeq: cursor.hold };
    cursor.hold = undefined;
    return start;
  }

  track(clientId: string, progress: Progress): void {
    this.cursor(clientId).live.add(progress);
  }

  closed(clientId: string, progress: Progress): void {
    const cursor = this.cursor(clientId);
    if (!cursor.live.delete(progress)) return;
    cursor.closedConfirmed = Math.max(cursor.closedConfirmed, progress.confirmedSeq);
    if (unread(progress)) cursor.hold = Math.min(cursor.hold ?? Infinity, progress.confirmedSeq);
  }

  /** The cursors to write: those that would move forward, and new holds. */
  pending(): CursorSave[] {
    const saves: CursorSave[] = [];
    for (const [clientId, cursor] of this.clients) {
      const target = cursor.target();
      if (target > cursor.saved || cursor.hold !== undefined) saves.push({ clientId, deliveredSeq: target, heldSeq: cursor.hold ?? null });
      else if (cursor.idle) this.clients.delete(clientId);
    }
    return saves;
  }

  /** The saves were written (or dropped for good): what they covered is no longer pending. */
  saved(saves: CursorSave[]): void {
    for (const save of saves) {
      const cursor = this.clients.get(save.clientId);
      if (!cursor) continue;
      cursor.saved = Math.max(cursor.saved, save.deliveredSeq);
      if (cursor.hold === save.heldSeq) cursor.hold = undefined;
      if (cursor.idle) this.clients.delete(save.clientId);
    }
  }

  get size(): number {
    return this.clients.size;
  }

  private cursor(clientId: string): ClientCursor {
    let cursor = this.clients.get(clientId);
    if (!cursor) this.clients.set(clientId, (cursor = new ClientCursor()));
    return cursor;
  }
}
