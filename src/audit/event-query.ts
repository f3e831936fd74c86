import { invalidInput } from '../common/errors/app-error.js';
import { readPageQuery } from '../common/validation/page-query.js';
import type { AuditEventFilter } from './audit-events.repository.js';

/** events:list and GET /admin/v1/events as they are given: strings, each optional. */
export interface EventQuery {
  username?: string;
  client?: string;
  since?: string;
  after?: string;
  limit?: string | number;
}

/** An event's id: the audit trail's bigserial. */
const EVENT_ID_SHAPE = /^[1-9]\d{0,17}$/;
const DURATION = /^(\d{1,6})([smhd])$/;
const SECONDS = { s: 1, m: 60, h: 3600, d: 86400 } as const;
/** As the tables hold them: a user's name, a client's id (anything longer matches nothing, so it is refused). */
const MAX_NAME = 200;

/**
 * Reads a query for the audit trail, refusing what could match nothing by mistake: `since` is an
 * ISO 8601 date or time (`2026-11-01`, `2026-11-01T09:00:00Z`) or a span back from now (`30m`,
 * `24h`, `7d`); `after` is an event id from a previous page; `limit` 1–1000 (default 100).
 */
export function readEventQuery(query: EventQuery, now = new Date()): AuditEventFilter {
  const filter: AuditEventFilter = readPageQuery(query.limit === undefined ? undefined : String(query.limit), query.after, EVENT_ID_SHAPE);
  if (query.username !== undefined) filter.username = boundedName(query.username, 'username');
  if (query.client !== undefined) filter.clientId = boundedName(query.client, 'client');
  if (query.since !== undefined) filter.since = readSince(query.since, now);
  return filter;
}

function boundedName(value: string, what: string): string {
  if (value === '' || value.length > MAX_NAME || /[\x00-\x1f\x7f]/.test(value)) throw invalidInput(`${what} must be 1 to ${MAX_NAME} printable characters`);
  return value;
}

function readSince(text: string, now: Date): Date {
  const span = DURATION.exec(text);
  if (span) return new Date(now.getTime() - Number(span[1]) * SECONDS[span[2] as keyof typeof SECONDS] * 1000);
  // Date.parse takes many forms; only ISO 8601's are accepted, so "since 03/04" is never guessed at.
  if (/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(text)) {
    const at = new Date(text);
    if (!Number.isNaN(at.getTime()) && at.getUTCFullYear() >= 1970 && at.getUTCFullYear() < 10000) return at;
  }
  throw invalidInput('since must be an ISO 8601 date or time (2026-11-01, 2026-11-01T09:00:00Z) or a span back from now (30m, 24h, 7d)');
}
