import type { DataSource, EntityManager } from 'typeorm';
import type { AnswerDeadline } from '../common/http/request-deadlines.js';
import { OAuthError } from '../oauth/oauth-error.js';

/** Registers what to do once the transaction has committed (telling this instance of a revocation at once). */
export type AfterCommit = (effect: () => void) => void;

/**
 * Runs `work` in a transaction that commits even when the answer is an OAuth error, so what a
 * failed request must change (a consumed code, a revoked grant) stays changed; then throws it.
 * The transaction runs through the request's deadline: the answer is never a 503 after it committed.
 */
export async function inTokenTransaction<T>(
  dataSource: DataSource,
  deadline: AnswerDeadline,
  work: (manager: EntityManager, afterCommit: AfterCommit) => Promise<T | OAuthError>,
): Promise<T> {
  const effects: (() => void)[] = [];
  const outcome = await deadline.commit(() => dataSource.transaction((manager) => work(manager, (effect) => effects.push(effect))));
  for (const effect of effects) effect();
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
}
