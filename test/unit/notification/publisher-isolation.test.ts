import { describe, expect, it } from 'vitest';
import { loadEnv } from '../../../src/config/env.js';
import { MetricsService } from '../../../src/metrics/metrics.service.js';
import type { PublishNotificationDto } from '../../../src/notification/publish/dto/publish-notification.dto.js';
import { NotificationPublisherService } from '../../../src/notification/publish/notification-publisher.service.js';
import type { InsertOutcome, NewNotification, NotificationsRepository } from '../../../src/notification/publish/notifications.repository.js';
import { validNotification } from '../../factories/notification.factory.js';

/** PostgreSQL's refusal, as TypeORM throws it. */
const refusal = (code: string) => Object.assign(new Error('query failed'), { driverError: { code } });

/**
 * A stand-in for the table: a batch holding `poison` fails as a whole with a data error, as
 * PostgreSQL fails a transaction; one holding `slowRecipient` (`*`: any) runs into a timeout
 * (`slowCode`, statement_timeout by default); `down` loses every connection; `lockedRecipient`'s lock is held
 * elsewhere until `release()`. The
 * publisher's own logic (how it splits and retries) is what is tested here; the real table is in
 * test/e2e/database/database-faults.test.ts.
 */
function storeFailingOn(rule: { poison?: string; lockedRecipient?: string; slowRecipient?: string; slowCode?: string; down?: boolean; env?: Record<string, string>; delayMs?: number }) {
  const transactions: string[][] = [];
  let lockHeld = true;
  const repository = {
    async insertBatch(batch: NewNotification[]): Promise<InsertOutcome[]> {
      transactions.push(batch.map((notification) => `${notification.recipient}:${notification.correlationId}`));
      await new Promise((resolve) => setTimeout(resolve, rule.delayMs ?? 5));
      if (batch.some((notification) => notification.correlationId === rule.poison)) throw refusal('22021');
      if (batch.some((notification) => rule.slowRecipient === '*' || notification.recipient === rule.slowRecipient)) throw refusal(rule.slowCode ?? '57014');
      if (rule.down) throw new Error('Connection terminated unexpectedly');
      const several = new Set(batch.map((notification) => notification.recipient)).size > 1;
      return batch.map((notification) =>
        // Like the real table: a batch of several recipients only tries their locks; one recipient waits for its own.
        several && lockHeld && notification.recipient === rule.lockedRecipient ? { recipientBusy: true } : { id: `id-${notification.correlationId}`, stored: true },
      );
    },
  } as unknown as NotificationsRepository;
  return { publisher: new NotificationPublisherService(repository, loadEnv({ PUBLISH_GROUP_COMMIT_MS: '0', ...rule.env }), new MetricsService()), transactions, release: () => (lockHeld = false) };
}

const publishAll = (publisher: NotificationPublisherService, bodies: PublishNotificationDto[]) =>
  Promise.all(bodies.map((body) => publisher.publish(body, null).then((result) => result.id, (error: Error) => error)));

describe('NotificationPublisherService: one failing publish never fails the others sharing its transaction', () => {
  it('retries a transaction that PostgreSQL refused one publish at a time: only the culprit fails', async () => {
    const bodies = Array.from({ length: 6 }, () => validNotification('r1') as PublishNotificationDto);
    const { publisher, transactions } = storeFailingOn({ poison: bodies[3].correlationId });
    const results = await publishAll(publisher, bodies);
    expect(results.filter((result) => result instanceof Error)).toHaveLength(1);
    expect(results[3]).toBeInstanceOf(Error);
    expect(results.filter((result) => typeof result === 'string')).toHaveLength(5);
    expect(transactions.some((transaction) => transaction.length > 1)).toBe(true); // they did share one
  });

  it.each([
    ['a statement timeout', '57014'],
    ['a lock timeout', '55P03'],
  ])('retries a transaction that ran into %s recipient by recipient: only the slow recipient fails, and it goes alone afterwards', async (_case, code) => {
    const { publisher, transactions } = storeFailingOn({ slowRecipient: 'slow', slowCode: code });
    // Four fill every slot, so the six after them queue and share a transaction when slots free up.
    const fillers = Array.from({ length: 4 }, (_, index) => validNotification(`filler-${index}`) as PublishNotificationDto);
    const bodies = ['a', 'slow', 'b', 'slow', 'a', 'c'].map((recipient) => validNotification(recipient) as PublishNotificationDto);
    const results = await publishAll(publisher, [...fillers, ...bodies]);
    const mine = results.slice(fillers.length);
    expect(mine.map((result, index) => (result instanceof Error ? `${bodies[index].recipient} failed` : bodies[index].recipient))).toEqual(['a', 'slow failed', 'b', 'slow failed', 'a', 'c']);
    const entry = (body: PublishNotificationDto) => `${body.recipient}:${body.correlationId}`;
    const shared = transactions.findIndex((transaction) => transaction.length === bodies.length);
    expect(transactions[shared]).toEqual(bodies.map(entry));
    // Then one transaction per recipient, each in the batch's order.
    const apart = transactions.slice(shared + 1);
    expect(apart).toHaveLength(4);
    expect(apart).toEqual(expect.arrayContaining(['a', 'slow', 'b', 'c'].map((recipient) => bodies.filter((body) => body.recipient === recipient).map(entry))));
    // The slow recipient is known now: its next publish goes in a transaction of its own.
    const [slowAgain, aAgain] = ['slow', 'a'].map((recipient) => validNotification(recipient) as PublishNotificationDto);
    const moreFillers = fillers.map((filler) => validNotification(filler.recipient) as PublishNotificationDto);
    await publishAll(publisher, [...moreFillers, slowAgain, aAgain]);
    expect(transactions.find((transaction) => transaction.includes(entry(slowAgain)))).toEqual([entry(slowAgain)]);
    expect(transactions.find((transaction) => transaction.includes(entry(aAgain)))).toEqual([entry(aAgain)]);
  });

  it('stops retrying recipient by recipient when every recipient is held up (a locked table): the rest fail untried, and nobody is taken for the slow one', async () => {
    const failing = { slowRecipient: '*', slowCode: '55P03' };
    const { publisher, transactions } = storeFailingOn(failing);
    const fillers = Array.from({ length: 4 }, (_, index) => validNotification(`filler-${index}`) as PublishNotificationDto);
    const bodies = Array.from({ length: 10 }, (_, index) => validNotification(`r${index}`) as PublishNotificationDto);
    const results = await publishAll(publisher, [...fillers, ...bodies]);
    expect(results.every((result) => result instanceof Error)).toBe(true);
    const shared = transactions.findIndex((transaction) => transaction.length === bodies.length);
    // One retry per lane, both held up: the database, not a recipient, is slow.
    expect(transactions.length - shared - 1).toBe(2);
    // So the recipients keep sharing transactions rather than each waiting for the table alone.
    delete (failing as { slowRecipient?: string }).slowRecipient;
    const again = [...fillers, ...bodies.slice(0, 3)].map((body) => validNotification(body.recipient) as PublishNotificationDto);
    await publishAll(publisher, again);
    expect(transactions.slice(-2).some((transaction) => transaction.length > 1)).toBe(true);
  });

  it('fails every publish of a transaction that lost its connection: the database is what is wrong', async () => {
    const { publisher, transactions } = storeFailingOn({ down: true });
    const fillers = Array.from({ length: 4 }, (_, index) => validNotification(`filler-${index}`) as PublishNotificationDto);
    const bodies = ['a', 'b', 'c'].map((recipient) => validNotification(recipient) as PublishNotificationDto);
    const results = await publishAll(publisher, [...fillers, ...bodies]);
    expect(results.every((result) => result instanceof Error)).toBe(true);
    // Nothing was tried again.
    expect(transactions).toHaveLength(fillers.length + 1);
  });

  it('leaves out a recipient whose lock is held elsewhere for a moment, stores the others at once, and the recipient in the next shared transaction, in order', async () => {
    const { publisher, transactions, release } = storeFailingOn({ lockedRecipient: 'locked' });
    // Four fill every slot, so the six after them queue and are batched together when slots free up.
    const fillers = Array.from({ length: 4 }, (_, index) => validNotification(`filler-${index}`) as PublishNotificationDto);
    const bodies = ['locked', 'free', 'locked', 'free', 'locked', 'free'].map((recipient) => validNotification(recipient) as PublishNotificationDto);
    const results = publishAll(publisher, [...fillers, ...bodies]);
    await new Promise((resolve) => setTimeout(resolve, 8));
    release(); // the other transaction commits
    expect((await results).every((result) => typeof result === 'string')).toBe(true);
    const entry = (body: PublishNotificationDto) => `${body.recipient}:${body.correlationId}`;
    // The free ones were stored in the first transaction they were in; the locked ones, after it, in their order and shared.
    const firstShared = transactions.find((transaction) => transaction.some((item) => item.startsWith('free:')))!;
    expect(firstShared).toEqual(bodies.map(entry));
    const storedLocked = transactions.filter((transaction) => transaction.some((item) => item.startsWith('locked:'))).at(-1)!;
    expect(storedLocked.filter((item) => item.startsWith('locked:'))).toEqual(bodies.filter((body) => body.recipient === 'locked').map(entry));
  });

  it('keeps trying a recipient whose lock stays held in shared transactions, never holding the others up, and stores it alone', async () => {
    const { publisher, transactions } = storeFailingOn({ lockedRecipient: 'locked' });
    const fillers = Array.from({ length: 4 }, (_, index) => validNotification(`filler-${index}`) as PublishNotificationDto);
    // Others keep publishing, so the locked one keeps riding in shared transactions and keeps being refused.
    const timed = (body: PublishNotificationDto) => {
      const start = Date.now();
      return publisher.publish(body, null).then(() => Date.now() - start);
    };
    const others: Promise<number>[] = fillers.map(timed);
    const locked = publisher.publish(validNotification('locked') as PublishNotificationDto, null);
    const start = Date.now();
    while (Date.now() - start < 300) {
      others.push(timed(validNotification(`other-${others.length % 3}`) as PublishNotificationDto));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await expect(locked).resolves.toMatchObject({ id: expect.any(String) });
    expect(Math.max(...(await Promise.all(others)))).toBeLessThan(100);
    const withLocked = transactions.filter((transaction) => transaction.some((entry) => entry.startsWith('locked:')));
    expect(withLocked.length).toBeGreaterThan(1); // refused while shared, first
    expect(withLocked.at(-1)).toEqual([expect.stringMatching(/^locked:/)]); // then stored alone, where it waits for its lock
  });
});
