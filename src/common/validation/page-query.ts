import { invalidInput } from '../errors/app-error.js';

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;

/** One page of a list: at most `limit` items whose ids come after `after`. */
export interface PageQuery {
  after?: string;
  limit: number;
}

/**
 * `?limit=` (1–1000, default 100) and `?after=` (the last id of the previous page), refused
 * unless `after` has the shape of the list's ids, so no query reaches the database with an id
 * it would refuse.
 */
export function readPageQuery(limit: unknown, after: unknown, idShape: RegExp): PageQuery {
  const page: PageQuery = { limit: DEFAULT_PAGE_LIMIT };
  if (limit !== undefined) {
    if (typeof limit !== 'string' || !/^\d{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_PAGE_LIMIT) {
      throw invalidInput(`limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}`);
    }
    page.limit = Number(limit);
  }
  if (after !== undefined) {
    if (typeof after !== 'string' || !idShape.test(after)) throw invalidInput('after must be the last id of the previous page');
    page.after = after;
  }
  return page;
}

/** The shapes of the listed ids. */
export const CLIENT_ID_SHAPE = /^[A-Za-z0-9_-]{1,64}$/;
export const USER_ID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
