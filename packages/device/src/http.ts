import { setTimeout as sleep } from 'node:timers/promises';
import { Forbidden, InvalidClient, RequestRefused, ServiceUnavailable, type VoyageError } from './errors.js';

/** An answer read whole: its JSON body, if it had one. */
export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | undefined;
}

/** How the client authenticates (client_secret_post; a public client sends its id alone). */
export interface ClientAuth {
  clientId: string;
  clientSecret?: string;
}

/** No single exchange waits longer than this. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Waits between attempts at a temporary failure with no Retry-After: doubling, within these. */
const FIRST_RETRY_MS = 1_000;
const LONGEST_RETRY_MS = 30_000;
/** A Retry-After beyond this is not waited for within one call. */
const LONGEST_RETRY_AFTER_MS = 300_000;

/** One HTTP exchange. A network failure or a timeout is ServiceUnavailable naming the address (fetch says only "fetch failed"). */
export async function exchange(url: string | URL, init: RequestInit = {}, timeoutMs = REQUEST_TIMEOUT_MS): Promise<Answer> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause?.message ?? (error as Error).message;
    throw new ServiceUnavailable(`cannot reach ${new URL(url).origin} (${cause})`, { cause: error });
  }
  const text = await response.text().catch(() => '');
  let body: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    // not JSON: an HTML page of a proxy, say
  }
  return { status: response.status, headers: response.headers, body };
}

/** A form POST authenticated with client_secret_post. */
export function postForm(url: string | URL, fields: Record<string, string>, client: ClientAuth, timeoutMs?: number): Promise<Answer> {
  const form = new URLSearchParams({ ...fields, client_id: client.clientId, ...(client.clientSecret !== undefined && { client_secret: client.clientSecret }) });
  return exchange(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body: form }, timeoutMs);
}

/** The error an unexpected answer means, for `what` ("the token request"). */
export function refusal(answer: Answer, what: string): VoyageError {
  const error = typeof answer.body?.error === 'string' ? answer.body.error : undefined;
  const description = typeof answer.body?.error_description === 'string' ? answer.body.error_description : undefined;
  if (answer.status === 401 && error === 'invalid_client') return new InvalidClient(description);
  if (answer.status === 403) return new Forbidden(what);
  return new RequestRefused(answer.status, error, description, what);
}

/** Answers worth asking again: the service or its proxy is busy, starting or stopping. */
export const isTemporary = (status: number) => status === 429 || status === 502 || status === 503 || status === 504;

/** How long a Retry-After (seconds or an HTTP date) asks to wait, or `fallbackMs`. */
export function retryAfterMs(headers: Headers, fallbackMs: number): number {
  const value = headers.get('retry-after');
  if (value === null) return fallbackMs;
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), LONGEST_RETRY_AFTER_MS) : fallbackMs;
}

/** Told of each temporary failure a call waits out: what failed, and how long until it tries again. */
export type OnRetry = (retry: { problem: string; inMs: number }) => void;

/**
 * Repeats `attempt` through temporary failures (network errors, 429, 502, 503, 504), waiting
 * `Retry-After` or a doubling pause, until `deadline` (ms since the epoch): the first other answer
 * is returned; past the deadline the last failure is thrown as ServiceUnavailable. Each wait is
 * told to `onRetry`, so a person is not left in silence while the service is away.
 */
export async function patiently(attempt: () => Promise<Answer>, deadline: number, what: string, onRetry?: OnRetry): Promise<Answer> {
  let pause = FIRST_RETRY_MS;
  for (;;) {
    let wait: number;
    let failure: string;
    try {
      const answer = await attempt();
      if (!isTemporary(answer.status)) return answer;
      wait = retryAfterMs(answer.headers, pause);
      failure = `${what}: the service answered ${answer.status}`;
    } catch (error) {
      if (!(error instanceof ServiceUnavailable)) throw error;
      wait = pause;
      failure = `${what}: ${error.message}`;
    }
    if (Date.now() + wait > deadline) throw new ServiceUnavailable(failure);
    onRetry?.({ problem: failure, inMs: wait });
    await sleep(wait);
    pause = Math.min(pause * 2, LONGEST_RETRY_MS);
  }
}
