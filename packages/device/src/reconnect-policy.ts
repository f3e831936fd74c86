/** How a stream connection ended, whatever its transport. */
export type Ending =
  /** A WebSocket close, or an SSE stream's last event mapped onto the same codes (shutdown 1001, token-expired 4003). */
  | { kind: 'closed'; code: number; reason: string; wasOpen: boolean }
  /** An HTTP answer instead of a stream. */
  | { kind: 'refused'; status: number; retryAfterMs?: number }
  /** The network: refused, reset, timed out, silent for too long. */
  | { kind: 'failed'; message: string };

/** What to do next: wait, maybe with a new token, maybe on server-sent events from then on. */
export interface Next {
  waitMs: number;
  renewToken: boolean;
  /** The WebSocket upgrade was refused by something that is not the service (a proxy): use SSE. */
  fallBackToSse?: boolean;
  /** Not worth retrying: the iteration ends with this. */
  fatal?: 'forbidden';
  why: string;
}

const SECOND = 1000;
const LONGEST_BACKOFF_MS = 60 * SECOND;

/** `base` plus up to `spread` at random, so a fleet does not reconnect in lockstep. */
const jittered = (base: number, spread: number, random: () => number) => base + random() * spread;

/**
 * The contract's reconnect rules, for the `failures`-th attempt in a row that did not open (0
 * after a connection that opened). Statuses a proxy answers for a refused WebSocket upgrade
 * (anything but the service's own 401, 403, 429 and 503) switch `auto` to server-sent events.
 */
export function nextAttempt(ending: Ending, failures: number, options: { canFallBack: boolean }, random: () => number = Math.random): Next {
  const backoff = Math.min(5 * SECOND * 2 ** failures, LONGEST_BACKOFF_MS);
  if (ending.kind === 'closed') {
    switch (ending.code) {
      case 1001:
        return { waitMs: jittered(0, SECOND, random), renewToken: false, why: 'the instance is stopping: reconnecting at once' };
      case 4003:
        return { waitMs: SECOND, renewToken: true, why: 'the token expired: a new one, then 1 s' };
      case 1008:
        return { waitMs: jittered(30 * SECOND, 5 * SECOND, random), renewToken: true, why: 'closed by policy (too many connections, or a right taken away): later, with a new token' };
      default:
        return { waitMs: jittered(ending.wasOpen ? 5 * SECOND : backoff, SECOND, random), renewToken: false, why: `closed ${ending.code}${ending.reason ? ` (${ending.reason})` : ''}` };
    }
  }
  if (ending.kind === 'failed') return { waitMs: jittered(backoff, SECOND, random), renewToken: false, why: ending.message };
  switch (ending.status) {
    case 401:
      return { waitMs: failures === 0 ? 0 : jittered(backoff, SECOND, random), renewToken: true, why: 'the token was refused (401): a new one' };
    case 403:
      return { waitMs: 0, renewToken: false, fatal: 'forbidden', why: 'the client may not subscribe (403)' };
    case 429:
    case 503:
      return { waitMs: ending.retryAfterMs ?? jittered(backoff, SECOND, random), renewToken: false, why: `the service is busy (${ending.status})` };
    default:
      if (options.canFallBack && ending.status < 500) return { waitMs: 0, renewToken: false, fallBackToSse: true, why: `the WebSocket upgrade was answered ${ending.status} (a proxy that refuses WebSocket?): server-sent events from now on` };
      return { waitMs: jittered(backoff, SECOND, random), renewToken: false, why: `the service answered ${ending.status}` };
  }
}
