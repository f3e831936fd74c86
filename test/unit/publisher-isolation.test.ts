import { describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import { Metrics } from '../../src/metrics/metrics.service.js';
import type { PublishNotificationDto } from '../../src/notification/dto/publish-notification.dto.js';
import { NotificationPublisher } from '../../src/notification/notification-publisher.service.js';
import type { InsertOutcome, NewNotification, NotificationsRepository } from '../../src/notification/notifications.repository.js';
import { validNotification } from '../factories/notification.factory.js';

/** PostgreSQL's refusal, as TypeORM throws it. */
const refusal = (code: string) => Object.assign(new Error('query failed'), { driverError: { code } });

/**
 * A stand-in for the table: a batch holding `poison` fails as a whole with a data error, as
 * PostgreSQL fails a transaction; `lockedRecipient`'s lock is held elsewhere. The
 * publisher's own logic (how it splits and retries) is what is tested here; the real table is in
 * test/e2e/database-faults.test.ts.
 */
function storeFailingOn(rule: { poison?: string; lockedRecipient?: string }) {
  const transactions: string[][] = [];
  const repository = {
    async insertBatch(batch: NewNotification[]): Promise<InsertOutcome[]> {
      transactions.push(batch.map((notification) => `${notification.recipient}:${notification.correlationId}`));
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (batch.some((notification) => notification.correlationId === rule.poison)) throw refusal('22021');
      const several = new Set(batch.map((notification) => notification.recipient)).size > 1;
      return batch.map((notification) =>
        // Like the real table: a batch of several recipients only tries their locks; one recipient waits for its own.
        several && notification.recipient === rule.lockedRecipient ? { recipientBusy: true } : { id: `id-${notification.correlationId}`, stored: true },
      );
    },
  } as unknown as NotificationsRepository;
  return { publisher: new NotificationPublisher(repository, loadEnv({}), new Metrics()), transactions };
}

const publishAll = (publisher: NotificationPublisher, bodies: PublishNotificationDto[]) =>
  Promise.all(bodies.map((body) => publisher.publish(body, null).then((result) => result.id, (error: Error) => error)));

describe('NotificationPublisher: one failing publish never fails the others sharing its transaction', () => {
  it('retries a transaction that PostgreSQL refused one publish at a time: only the culprit fails', async () => {
    const bodies = Array.from({ length: 6 }, () => validNotification('r1') as PublishNotificationDto);
    const { publisher, transactions } = storeFailingOn({ poison: bodies[3].correlationId });
    const results = await publishAll(publisher, bodies);
    expect(results.filter((result) => result instanceof Error)).toHaveLength(1);
    expect(results[3]).toBeInstanceOf(Error);
    expect(results.filter((result) => typeof result === 'string')).toHaveLength(5);
    expect(transactions.some((transaction) => transaction.length > 1)).toBe(true); // they did share one
  });

  it('leaves out a recipient whose lock is held elsewhere and publishes it alone, while the others are stored at once', async () => {
    const locked = Array.from({ length: 3 }, () => validNotification('locked') as PublishNotificationDto);
    const free = Array.from({ length: 3 }, () => validNotification('free') as PublishNotificationDto);
    const { publisher, transactions } = storeFailingOn({ lockedRecipient: 'locked' });
    // Four fill every slot, so the six after them queue and are batched together when slots free up.
    const fillers = Array.from({ length: 4 }, (_, index) => validNotification(`filler-${index}`) as PublishNotificationDto);
    const results = await publishAll(publisher, [...fillers, locked[0], free[0], locked[1], free[1], locked[2], free[2]]);
    expect(results.every((result) => typeof result === 'string')).toBe(true);
    const shared = transactions.filter((transaction) => transaction.some((entry) => entry.startsWith('free:')));
    expect(shared.flat().filter((entry) => entry.startsWith('free:'))).toHaveLength(3);
    // After it was found busy, the locked recipient went in transactions of its own.
    const last = transactions.filter((transaction) => transaction.some((entry) => entry.startsWith('locked:'))).at(-1)!;
    expect(last.every((entry) => entry.startsWith('locked:'))).toBe(true);

    transactions.length = 0;
    await publishAll(publisher, [...fillers, validNotification('free'), validNotification('locked'), validNotification('free')] as PublishNotificationDto[]);
    const withLocked = transactions.filter((transaction) => transaction.some((entry) => entry.startsWith('locked:')));
    expect(withLocked).toEqual([[expect.stringMatching(/^locked:/)]]);
  });
});
