import type { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';

/** Effects waiting for the transaction of a query runner to commit. */
const waiting = new WeakMap<QueryRunner, (() => void)[]>();

/** Runs the waiting effects when the outermost transaction commits, and drops them when it rolls back. */
const subscriber: EntitySubscriberInterface = {
  afterTransactionCommit({ queryRunner }: TransactionCommitEvent) {
    if (queryRunner.isTransactionActive) return; // a savepoint released: the transaction goes on
    const effects = waiting.get(queryRunner) ?? [];
    waiting.delete(queryRunner);
    for (const effect of effects) effect();
  },
  afterTransactionRollback({ queryRunner }: TransactionRollbackEvent) {
    if (!queryRunner.isTransactionActive) waiting.delete(queryRunner);
  },
};

const subscribed = new WeakSet<DataSource>();

/**
 * Runs `effect` (telling this instance's memory of a change) once the transaction `manager` writes
 * in has committed, and never when it rolls back: memory never runs ahead of the database. A
 * manager outside a transaction has committed each statement already, so `effect` runs at once.
 * Rolling back to a savepoint keeps the effects registered inside it (none of ours uses one).
 */
export function afterCommit(manager: EntityManager, effect: () => void): void {
  const runner = manager.queryRunner;
  if (!runner?.isTransactionActive) {
    effect();
    return;
  }
  if (!subscribed.has(manager.dataSource)) {
    manager.dataSource.subscribers.push(subscriber);
    subscribed.add(manager.dataSource);
  }
  waiting.set(runner, [...(waiting.get(runner) ?? []), effect]);
}
