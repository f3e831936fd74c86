import type { Publication } from './publisher.js';
import { REPEATS_ALLOWED, SUBSCRIBER_KINDS, type SubscriberKind } from './stream-kinds.js';
import type { Arrival, Mailbox, Subscriber } from './subscribers.js';

export interface DeliveryCount {
  /** Notifications answered 202. */
  accepted: number;
  /** Of those, received by their recipient at least once. */
  delivered: number;
  /** Answered 202 and never received (must be 0). */
  lost: number;
  /** The first 20 lost, each described: key, recipient, when accepted, its place among the recipient's, whether a later one arrived. */
  lostExamples: string[];
  /** Messages a subscriber got again (same key, same subscriber): allowed (at-least-once) where its kind allows repeats, counted. */
  duplicates: number;
  /** Messages that reached a client they were not published to (must be 0). */
  misdelivered: number;
  /** Recipients whose first arrivals are not in the order of their 202s (must be none). */
  outOfOrder: { recipient: string; firstDifference: number; expected: string; received: string }[];
}

/** The same for the clients of one kind (v1, v2, SSE), and what only a resuming kind can be told. */
export interface KindDelivery extends DeliveryCount {
  kind: SubscriberKind;
  /** Subscribers (streams, reconnected over and over) of this kind. */
  subscribers: number;
  /** Streams they opened during the run: each one after a cut is a resume (v2: `after`, SSE: `Last-Event-ID`). */
  reconnects: number;
  /** Whether the kind may get a message again (v1, v2: what was sent and not confirmed); SSE may not. */
  repeatsAllowed: boolean;
  /** `reset` messages or events: a history said to be incomplete (must be 0: no retention or database change here). */
  resets: number;
}

export interface DeliveryCheck extends DeliveryCount {
  /** Per subscriber kind present, in the order v1, v2, SSE. */
  byKind: KindDelivery[];
}

/**
 * The guarantee under test: every notification answered 202 reaches its recipient at least once,
 * and per recipient the first arrivals come in the order of the 202s (publishes to one recipient
 * are sequential, so that is publish order). Counted over all clients and for each kind of
 * subscriber: each client reads with one kind, so a kind's notifications are its clients'.
 */
export function checkDelivery(publications: Publication[], mailbox: Mailbox, subscribers: Subscriber[], runStartedAt: number): DeliveryCheck {
  const recipientOf = new Map(publications.map((publication) => [publication.key, publication.recipient]));
  const kindOf = new Map(subscribers.map((subscriber) => [subscriber.client.id, subscriber.kind]));
  const byKind = SUBSCRIBER_KINDS.filter((kind) => subscribers.some((subscriber) => subscriber.kind === kind)).map(
    (kind): KindDelivery => ({
      kind,
      subscribers: subscribers.filter((subscriber) => subscriber.kind === kind).length,
      reconnects: subscribers.filter((subscriber) => subscriber.kind === kind).reduce((sum, subscriber) => sum + subscriber.opens.filter((open) => open.at >= runStartedAt).length, 0),
      repeatsAllowed: REPEATS_ALLOWED[kind],
      resets: mailbox.resets.filter((reset) => reset.kind === kind).length,
      ...countDelivery(
        publications.filter((publication) => kindOf.get(publication.recipient) === kind),
        mailbox.arrivals.filter((arrival) => arrival.kind === kind),
        recipientOf,
        mailbox,
      ),
    }),
  );
  return { ...countDelivery(publications, mailbox.arrivals, recipientOf, mailbox), byKind };
}

/** `publications` to check, `arrivals` at the subscribers concerned; `recipientOf` knows every key published. */
function countDelivery(publications: Publication[], arrivals: Arrival[], recipientOf: Map<string, string>, mailbox: Mailbox): DeliveryCount {
  // `publications` lists each recipient's publishes in the order they were made (and answered).
  const accepted = publications.filter((publication) => publication.acceptedAt !== undefined);

  const lost = accepted.filter((publication) => !mailbox.has(publication.recipient, publication.key));

  let duplicates = 0;
  let misdelivered = 0;
  const seenBySubscriber = new Set<string>();
  const firstArrivals = new Map<string, string[]>(); // recipient -> keys in order of first arrival
  const firstSeen = new Set<string>();
  // Arrivals are in arrival order; ones this run did not publish (an earlier run's) are left out.
  for (const arrival of arrivals) {
    const publishedTo = recipientOf.get(arrival.key);
    if (publishedTo === undefined) continue;
    if (publishedTo !== arrival.recipient) misdelivered++;
    const bySubscriber = `${arrival.subscriber}\n${arrival.key}`;
    if (seenBySubscriber.has(bySubscriber)) duplicates++;
    seenBySubscriber.add(bySubscriber);
    if (!firstSeen.has(arrival.key)) {
      firstSeen.add(arrival.key);
      const keys = firstArrivals.get(arrival.recipient) ?? [];
      keys.push(arrival.key);
      firstArrivals.set(arrival.recipient, keys);
    }
  }

  // Compare only what was both accepted and received: a publish that failed may still have been
  // stored (and delivered) before its answer was lost; it has no place in the 202 order.
  const acceptedKeys = new Set(accepted.map((publication) => publication.key));
  const outOfOrder: DeliveryCount['outOfOrder'] = [];
  for (const recipient of new Set(accepted.map((publication) => publication.recipient))) {
    const expected = accepted.filter((publication) => publication.recipient === recipient && mailbox.has(recipient, publication.key)).map((publication) => publication.key);
    const received = (firstArrivals.get(recipient) ?? []).filter((key) => acceptedKeys.has(key));
    const firstDifference = expected.findIndex((key, index) => received[index] !== key);
    if (firstDifference !== -1) outOfOrder.push({ recipient, firstDifference, expected: expected[firstDifference], received: received[firstDifference] });
  }

  return {
    accepted: accepted.length,
    delivered: accepted.length - lost.length,
    lost: lost.length,
    lostExamples: lost.slice(0, 20).map((publication) => describeLost(publication, accepted, mailbox)),
    duplicates,
    misdelivered,
    outOfOrder,
  };
}

/**
 * "key (to recipient, accepted at 14:02:03.412, its 31st of 45; a later one arrived)": whether the
 * recipient's stream moved past it (an ordering fault) or stopped before it (a missed wake-up).
 */
function describeLost(publication: Publication, accepted: Publication[], mailbox: Mailbox): string {
  const ofRecipient = accepted.filter((other) => other.recipient === publication.recipient);
  const position = ofRecipient.indexOf(publication);
  const laterArrived = ofRecipient.slice(position + 1).some((later) => mailbox.has(later.recipient, later.key));
  const acceptedAt = new Date(publication.acceptedAt!).toISOString().slice(11, 23);
  return `${publication.key} (to ${publication.recipient}, accepted at ${acceptedAt}, its ${position + 1} of ${ofRecipient.length}; ${laterArrived ? 'a later one arrived' : 'none later arrived'})`;
}

/** Waits (bounded) until every accepted publication has reached its recipient. */
export async function waitForDelivery(publications: () => Publication[], mailbox: Mailbox, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const missing = publications().some((publication) => publication.acceptedAt !== undefined && !mailbox.has(publication.recipient, publication.key));
    if (!missing) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** How long one stream stayed open while a notification for its client, accepted after it opened, had not reached it. */
export interface Silence {
  subscriber: number;
  recipient: string;
  instance: string;
  openedAt: number;
  ms: number;
}

/**
 * Per stream (one connection of a subscriber), its longest silence: from a notification's 202 to
 * its arrival on that stream, or to the stream's close (or `now`) if it never came. Only
 * notifications accepted `marginMs` after the stream opened count: what was stored just before
 * may have been confirmed by the client's other stream, and is not due on the new one. Longest first.
 */
export function silences(subscribers: Subscriber[], publications: Publication[], mailbox: Mailbox, marginMs: number, now = Date.now()): Silence[] {
  const arrivals = new Map<string, number[]>(); // subscriber + key -> arrival times, in order
  for (const arrival of mailbox.arrivals) {
    const key = `${arrival.subscriber}\n${arrival.key}`;
    arrivals.set(key, [...(arrivals.get(key) ?? []), arrival.at]);
  }
  const found: Silence[] = [];
  for (const subscriber of subscribers) {
    const due = publications.filter((publication) => publication.recipient === subscriber.client.id && publication.acceptedAt !== undefined);
    subscriber.opens.forEach((open, index) => {
      const end = subscriber.closes[index]?.at ?? now;
      let longest = 0;
      for (const publication of due) {
        if (publication.acceptedAt! < open.at + marginMs || publication.acceptedAt! >= end) continue;
        const arrived = arrivals.get(`${subscriber.id}\n${publication.key}`)?.find((at) => at >= open.at && at < end);
        longest = Math.max(longest, (arrived ?? end) - publication.acceptedAt!);
      }
      if (longest > 0) found.push({ subscriber: subscriber.id, recipient: subscriber.client.id, instance: open.instance, openedAt: open.at, ms: longest });
    });
  }
  return found.sort((a, b) => b.ms - a.ms);
}
