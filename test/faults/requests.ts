import WebSocket from 'ws';
import type { Credentials } from './clients.js';
import type { Instance } from './instances.js';
import { LIMITS } from './scale.js';

export const STREAM_PATH = '/voyage/notification/v1/ws/products';
export const PUBLISH_PATH = '/voyage/notification/v1/notifications';
export const TOKEN_PATH = '/public/api/oauth2/token';

export type Route = 'publish' | 'token' | 'health' | 'upgrade';
/** Who made a request: the publisher load, a route probe, or a subscriber (re)connecting. */
export type Source = 'publisher' | 'probe' | 'subscriber';
/** An HTTP status (101 for an accepted upgrade), or no answer at all. */
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

/**
 * Opens a stream. `onMessage` is attached before the handshake, since a replay may arrive in the
 * same packet as the 101. Resolves once the handshake is decided: `stream` when it was accepted
 * (101), otherwise the failure is in `attempt.outcome` and the socket is gone.
 */
export function openStream(
  log: AttemptLog,
  source: Source,
  instance: Instance,
  token: string,
  onMessage: (text: string) => void = () => {},
): Promise<{ attempt: Attempt; stream?: OpenStream }> {
  const startedAt = Date.now();
  const socket = new WebSocket(`${instance.baseUrl.replace(/^http/, 'ws')}${STREAM_PATH}`, {
    headers: { authorization: `Bearer ${token}` },
    handshakeTimeout: LIMITS.requestTimeoutMs,
  });
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  socket.on('message', (data, isBinary) => {
    if (!isBinary) onMessage(data.toString());
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
