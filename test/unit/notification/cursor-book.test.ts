import { describe, expect, it } from 'vitest';
import { CursorBook, type Progress } from '../../../src/notification/delivery/cursor-book.js';

const progress = (sentSeq: number, confirmedSeq: number): Progress => ({ sentSeq, confirmedSeq });

describe('CursorBook', () => {
  it('moves a client’s cursor to what every live connection has read, and saves each value once', () => {
    const book = new CursorBook();
    const fast = progress(0, 0);
    const slow = progress(0, 0);
    book.track('c', fast);
    book.track('c', slow);
    Object.assign(fast, { sentSeq: 10, confirmedSeq: 10 });
    Object.assign(slow, { sentSeq: 10, confirmedSeq: 4 });
    expect(book.pending()).toEqual([{ clientId: 'c', deliveredSeq: 4, heldSeq: null }]);
    book.saved(book.pending());
    expect(book.pending()).toEqual([]);
    slow.confirmedSeq = 10;
    expect(book.pending()).toEqual([{ clientId: 'c', deliveredSeq: 10, heldSeq: null }]);
  });

  it('leaves a hold for a connection that closed unread, which the next connection takes over', () => {
    const book = new CursorBook();
    const reader = progress(7, 7);
    const silent = progress(7, 3);
    book.track('c', reader);
    book.track('c', silent);
    book.closed('c', silent);
    expect(book.pending()).toEqual([{ clientId: 'c', deliveredSeq: 7, heldSeq: 3 }]);
    expect(book.claim('c')).toEqual({ confirmedSeq: 7, heldSeq: 3 });
    // Taken over before it was saved: it is not written any more.
    expect(book.pending()).toEqual([{ clientId: 'c', deliveredSeq: 7, heldSeq: null }]);
  });

  it('keeps a hold that came after the save of an earlier one', () => {
    const book = new CursorBook();
    const first = progress(5, 2);
    book.track('c', first);
    book.closed('c', first);
    const saves = book.pending();
    const second = progress(5, 1);
    book.track('c', second);
    book.closed('c', second);
    book.saved(saves);
    expect(book.pending()).toEqual([{ clientId: 'c', deliveredSeq: 2, heldSeq: 1 }]);
  });

  it('forgets a client once its connections are gone and everything is saved', () => {
    const book = new CursorBook();
    const only = progress(3, 3);
    book.track('c', only);
    book.closed('c', only);
    book.saved(book.pending());
    expect(book.pending()).toEqual([]);
    expect(book.size).toBe(0);
  });
});

describe('CursorBook: a connection that took a hold over', () => {
  it('owes it until it confirms catching up: closing before leaves the hold again', () => {
    const book = new CursorBook();
    const taker: Progress = { sentSeq: 3, confirmedSeq: 3, owesHold: true };
    book.track('c', taker);
    expect(book.pending()).toEqual([{ clientId: 'c', deliveredSeq: 3, heldSeq: null }]);
    book.saved(book.pending());
    book.closed('c', taker);
    expect(book.pending()).toEqual([{ clientId: 'c', deliveredSeq: 3, heldSeq: 3 }]);
  });

  it('gives a hold back when the connection could not start', () => {
    const book = new CursorBook();
    book.unclaim('c', 5);
    expect(book.claim('c')).toEqual({ confirmedSeq: 0, heldSeq: 5 });
  });
});
