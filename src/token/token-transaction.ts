import type { DataSource, EntityManager } from 'typeorm';
import { OAuthError } from './oauth-error.js';

/**
 * Runs `work` in a transaction that commits even when the answer is an OAuth error, so what a
 * failed request must change (a consumed code, a revoked grant) stays changed; then throws it.
 */
export async function inTokenTransaction<T>(dataSource: DataSource, work: (manager: EntityManager) => Promise<T | OAuthError>): Promise<T> {
  const outcome = await dataSource.transaction(work);
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
}
