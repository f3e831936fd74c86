import { isDatabaseUnavailable } from './database-unavailable.js';
import { QueueFullError } from '../batching/batcher.js';

/** Seconds a caller is asked to wait (Retry-After) after a 503. */
export const RETRY_AFTER_S = 1;

/** A request that was not answered within REQUEST_TIMEOUT_MS. */
export class RequestDeadlineError extends Error {
  constructor(timeoutMs: number) {
    super(`the request was not answered within ${timeoutMs} ms`);
    this.name = 'RequestDeadlineError';
  }
}

/**
 * Whether a failure is the service's momentary state (database away or busy, a request past its
 * deadline, too much work queued already), answered 503 with Retry-After.
 */
export const isTemporarilyUnavailable = (error: unknown) => error instanceof RequestDeadlineError || error instanceof QueueFullError || isDatabaseUnavailable(error);
