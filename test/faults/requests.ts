import { EventSource } from 'eventsource';
import WebSocket from 'ws';
import type { Credentials } from './clients.js';
import type { Instance } from './instances.js';
import { LIMITS } from './scale.js';

export const STREAM_PATH = '/voyage/notification/v1/ws/products';
export const EVENT_STREAM_PATH = '/voyage/notification/v1/sse/products';
export const PUBLISH_PATH = '/voyage/notification/v1/notifications';
export const TOKEN_PATH = '/public/api/oauth2/token';

/** `upgrade`: a WebSocket stream (v1 or v2); `sse`: the event stream's GET. */
export type Route = 'publish' | 'token' | 'health' | 'upgrade' | 'sse';
/** Who made a request: the publisher load, a route probe, or a subscriber (re)connecting. */
export type Source = 'publisher' | 'probe' | 'subscriber';
/** An HTTP status (101 for an accepted upgrade, 200 for an event stream), or no answer at all. */
export type Outcome = number | 'network error' | 'timeout';

/** One request as the client saw it. */
export interface Attempt {
  route: Route;
  source: Source;
  instance: string;
  startedAt: number;
  endedAt: number;
  outcome: Outcome;
  /** Whether a failure carried Retry-After. */
  retryAfter: boolean;
  /** For a publish: the notification's recipient. */
  recipient?: string;
}

export const succeeded = (attempt: Attempt) => attempt.outcome === 200 || attempt.outcome === 202 || attempt.outcome === 101;
export const latency = (attempt: Attempt) => attempt.endedAt - attempt.startedAt;

/** Every request of a scenario, in the order they ended. */
export class AttemptLog {
  readonly attempts: Attempt[] = [];
  add(attempt: Attempt) {
    this.attempts.push(attempt);
  }
}

interface Answer {
  attempt: Attempt;
  text: string;
}

/** fetch with the client's timeout, measured and classified; never throws. */
async function timedFetch(log: AttemptLog, route: Route, source: Source, instance: Instance, path: string, init: RequestInit, recipient?: string): Promise<Answer> {
  const startedAt = Date.now();
  let outcome: Outcome;
  let text = '';
  let retryAfter = false;
  try {
    const response = await fetch(`${instance.baseUrl}${path}`, { ...init, signal: AbortSignal.timeout(LIMITS.requestTimeoutMs) });
    text = await response.text();
    outcome = response.status;
    retryAfter = response.headers.has('retry-after');
  } catch (error) {
    outcome = (error as Error).name === 'TimeoutError' ? 'timeout' : 'network error';
  }
  const attempt: Attempt = { route, source, instance: instance.name, startedAt, endedAt: Date.now(), outcome, retryAfter, recipient };
  log.add(attempt);
  return { attempt, text };
}

/** POST /public/api/oauth2/token with client credentials in the form (as clients of the notification service do). */
export async function requestToken(log: AttemptLog, source: Source, instance: Instance, client: Credentials, scope?: string) {
  const form: Record<string, string> = { grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret };
  if (scope) form.scope = scope;
  const { attempt, text } = await timedFetch(log, 'token', source, instance, TOKEN_PATH, { method: 'POST', body: new URLSearchParams(form) });
  const token = attempt.outcome === 200 ? (JSON.parse(text) as { access_token: string }).access_token : undefined;
  return { attempt, token };
}

export async function publishOnce(log: AttemptLog, source: Source, instance: Instance, token: string, body: { recipient: string }) {
  const init = { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) };
  return timedFetch(log, 'publish', source, instance, PUBLISH_PATH, init, body.recipient);
}

export async function checkHealth(log: AttemptLog, source: Source, instance: Instance) {
  return (await timedFetch(log, 'health', source, instance, '/health', {})).attempt;
}

/** An accepted stream: its close code arrives on `closed` (listened to from the start, so never missed). */
export interface OpenStream {
  socket: WebSocket;
  closed: Promise<number>;
}

export interface StreamOptions {
  /** Called with each text message (and the socket, so a client can answer it). */
  onMessage?: (text: string, socket: WebSocket) => void;
  /** The subprotocol to offer (protocol v2: `voyage.v2`); none for the seed's stream. */
  protocol?: string;
  /** Query parameters of the upgrade (a v2 client's `after` and `epoch`). */
  query?: Record<string, string>;
}

/**
 * Opens a stream. `onMessage` is attached before the handshake, since a replay may arrive in the
 * same packet as the 101. Resolves once the handshake is decided: `stream` when it was accepted
 * (101), otherwise the failure is in `attempt.outcome` and the socket is gone.
 */
export function openStream(log: AttemptLog, source: Source, instance: Instance, token: string, options: StreamOptions = {}): Promise<{ attempt: Attempt; stream?: OpenStream }> {
  const startedAt = Date.now();
  const query = options.query && Object.keys(options.query).length > 0 ? `?${new URLSearchParams(options.query)}` : '';
  const socket = new WebSocket(`${instance.baseUrl.replace(/^http/, 'ws')}${STREAM_PATH}${query}`, options.protocol ? [options.protocol] : [], {
    headers: { authorization: `Bearer ${token}` },
    handshakeTimeout: LIMITS.requestTimeoutMs,
  });
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  socket.on('message', (data, isBinary) => {
    if (!isBinary) options.onMessage?.(data.toString(), socket);
  });
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Outcome, retryAfter = false) => {
      if (settled) return;
      settled = true;
      const attempt: Attempt = { route: 'upgrade', source, instance: instance.name, startedAt, endedAt: Date.now(), outcome, retryAfter };
      log.add(attempt);
      resolve({ attempt, stream: outcome === 101 ? { socket, closed } : undefined });
    };
    socket.once('open', () => settle(101));
    socket.once('unexpected-response', (_request, response) => {
      settle(response.statusCode ?? 0, response.headers['retry-after'] !== undefined);
      socket.terminate();
    });
    // Before the handshake: refused, reset or timed out. After it, `closed` tells the rest.
    socket.on('error', (error) => settle(/timeout/i.test(error.message) ? 'timeout' : 'network error'));
  });
}

/**
 * How an event stream ended, in the WebSocket close codes the rest of the suite counts: the code
 * of the event it ended with (`shutdown` 1001, `token-expired` 4003), 1000 for an end the server
 * chose without one (a start that failed: the WebSocket's 1013), 1006 when it was cut.
 */
const CLOSE_OF_EVENT: Record<string, number> = { shutdown: 1001, 'token-expired': 4003 };
const ENDED = 1000;
const CUT = 1006;

/** An event stream that answered 200: `closed` tells how it ended; `close()` ends it from this side. */
export interface OpenEventStream {
  source: EventSource;
  closed: Promise<number>;
  close(): void;
}

export interface EventStreamOptions {
  /** Sent as `Last-Event-ID`: the stream resumes after it. */
  lastEventId?: string;
  /** Called with each event of these types (the id is the event's, or the last one before it). */
  events: string[];
  onEvent: (type: string, data: string, id: string) => void;
}

/**
 * Opens the event stream with a real EventSource, for one connection only: the caller reconnects
 * (to whichever instance is up, with a fresh token and its own Last-Event-ID), so EventSource's own
 * reconnect (same URL, same token, 3 s, and never again after a non-200 answer) is stopped at the
 * first error. Resolves once the answer is known: `stream` for a 200, otherwise the failure is in
 * `attempt.outcome`.
 */
export function openEventStream(log: AttemptLog, source: Source, instance: Instance, token: string, options: EventStreamOptions): Promise<{ attempt: Attempt; stream?: OpenEventStream }> {
  const startedAt = Date.now();
  let endedWith: number | undefined;
  let resolveClosed!: (code: number) => void;
  const closed = new Promise<number>((resolve) => (resolveClosed = resolve));
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Outcome, retryAfter = false) => {
      if (settled) return;
      settled = true;
      const attempt: Attempt = { route: 'sse', source, instance: instance.name, startedAt, endedAt: Date.now(), outcome, retryAfter };
      log.add(attempt);
      if (outcome !== 200) {
        eventSource.close();
        resolve({ attempt });
        return;
      }
      const close = () => {
        eventSource.close();
        resolveClosed(CUT);
      };
      resolve({ attempt, stream: { source: eventSource, closed, close } });
    };
    const eventSource = new EventSource(`${instance.baseUrl}${EVENT_STREAM_PATH}`, {
      // The client's timeout bounds the wait for the answer's headers, not the stream.
      fetch: async (input, init) => {
        const headers = new Headers(init?.headers as ConstructorParameters<typeof Headers>[0]);
        headers.set('Authorization', `Bearer ${token}`);
        if (options.lastEventId !== undefined) headers.set('Last-Event-ID', options.lastEventId);
        const controller = new AbortController();
        init?.signal?.addEventListener('abort', () => controller.abort(init.signal?.reason));
        const timer = setTimeout(() => controller.abort(new DOMException('no answer in time', 'TimeoutError')), LIMITS.requestTimeoutMs);
        try {
          const response = await fetch(input, { ...init, headers, signal: controller.signal });
          settle(response.status, response.headers.has('retry-after'));
          return response;
        } catch (error) {
          settle((error as Error).name === 'TimeoutError' ? 'timeout' : 'network error');
          throw error;
        } finally {
          clearTimeout(timer);
        }
      },
    });
    for (const type of options.events) {
      eventSource.addEventListener(type, (event) => {
        if (CLOSE_OF_EVENT[type] !== undefined) endedWith = CLOSE_OF_EVENT[type];
        options.onEvent(type, event.data, event.lastEventId);
      });
    }
    for (const type of Object.keys(CLOSE_OF_EVENT)) if (!options.events.includes(type)) eventSource.addEventListener(type, () => (endedWith = CLOSE_OF_EVENT[type]));
    // After the 200, an error is the stream's end: EventSource would reconnect by itself, the caller does instead.
    eventSource.addEventListener('error', (event) => {
      if (!settled) return;
      eventSource.close();
      resolveClosed(endedWith ?? ((event as { message?: string }).message === undefined ? ENDED : CUT));
    });
  });
}
