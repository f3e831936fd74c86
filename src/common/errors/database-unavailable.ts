/**
 * Whether an error means "PostgreSQL cannot serve this right now" (down, restarting, overloaded,
 * a timeout or a lock wait ran out) rather than "this request is wrong" or "the code is wrong".
 * Such a failure is answered 503 with Retry-After: the caller should try again, and nothing it
 * sent was at fault.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return databaseUnavailableReason(error) !== undefined;
}

/** The kind of unavailability, for metrics and logs: `timeout`, `lock`, `connection`, `overload`; undefined when it is none. */
export function databaseUnavailableReason(error: unknown): DatabaseUnavailableReason | undefined {
  for (const cause of causes(error)) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') {
      const reason = SQLSTATE_REASONS[code] ?? (code.startsWith('08') ? 'connection' : undefined) ?? NODE_ERROR_REASONS[code];
      if (reason) return reason;
    }
    const message = (cause as { message?: unknown }).message;
    if (typeof message === 'string' && CONNECTION_MESSAGES.some((pattern) => pattern.test(message))) return 'connection';
  }
  return undefined;
}

export type DatabaseUnavailableReason = 'timeout' | 'lock' | 'connection' | 'overload';

const SQLSTATE_REASONS: Record<string, DatabaseUnavailableReason> = {
  '57014': 'timeout', // query_canceled: statement_timeout ran out
  '25P03': 'timeout', // idle_in_transaction_session_timeout
  '55P03': 'lock', // lock_not_available: lock_timeout ran out
  '40P01': 'lock', // deadlock_detected
  '40001': 'lock', // serialization_failure
  '57P01': 'connection', // admin_shutdown (fast stop)
  '57P02': 'connection', // crash_shutdown
  '57P03': 'connection', // cannot_connect_now (starting up, shutting down, recovering)
  '53300': 'overload', // too_many_connections
  '53400': 'overload', // configuration_limit_exceeded
};

/** Socket errors on the way to the server. */
const NODE_ERROR_REASONS: Record<string, DatabaseUnavailableReason> = {
  ECONNREFUSED: 'connection',
  ECONNRESET: 'connection',
  EPIPE: 'connection',
  ETIMEDOUT: 'connection',
  EHOSTUNREACH: 'connection',
  ENETUNREACH: 'connection',
  EAI_AGAIN: 'connection',
};

/** What pg, pg-pool and TypeORM say when the connection is gone or cannot be had (they set no code). */
const CONNECTION_MESSAGES = [
  /^timeout exceeded when trying to connect$/,
  /^Connection terminated/,
  /connection error and is not queryable/,
  /^Client was closed and is not queryable$/,
  /^Query runner already released/,
  /^Database connection provided by a query runner was already released/,
  /database is not established/,
];

/** The error, what TypeORM wrapped (`driverError`) and what it was caused by. */
function* causes(error: unknown): Generator<object> {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current !== null && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    yield current;
    const { driverError, cause } = current as { driverError?: unknown; cause?: unknown };
    current = driverError ?? cause;
  }
}
