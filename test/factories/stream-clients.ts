import { EventSource } from 'eventsource';
import WebSocket from 'ws';
import type { TestApp } from '../setup/test-app.js';
import { type PublishBody, publish, SUBSCRIBE_SCOPE, validNotification } from './notification.factory.js';
import { createClient, type TestClient } from './oauth.factory.js';

/**
 * Notification stream clients as device makers would write them: a protocol v2 WebSocket client
 * (`ws`, subprotocol voyage.v2) and a server-sent events client (the `eventsource` package, a
 * WHATWG EventSource that may send an Authorization header). Each records what it received and
 * how it ended; every one opened is closed by `closeStreamClients`.
 */

export const WS_PATH = '/voyage/notification/v1/ws/products';
export const SSE_PATH = '/voyage/notification/v1/sse/products';

const open = new Set<{ close(): void }>();

/** A client that may subscribe (client credentials, the subscribe scope). */
export const subscriberClient = (app: TestApp): Promise<TestClient> => createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });

/** Publishes a valid notification to `recipient` with a publisher's token; throws unless 202. */
export async function publishTo(app: TestApp, publisherToken: string, recipient: string): Promise<PublishBody> {
  const body = validNotification(recipient);
  const response = await publish(app, publisherToken, body);
  if (response.status !== 202) throw new Error(`publish answered ${response.status}: ${response.text}`);
  return body;
}

/** Closes every client the test opened. */
export function closeStreamClients(): void {
  for (const client of open) client.close();
  open.clear();
}

export interface V2Message {
  type: string;
  seq?: number;
  epoch?: string;
  data?: Record<string, unknown>;
  reason?: string;
  in?: number;
}

export interface V2Client {
  ws: WebSocket;
  /** Every message, parsed, in arrival order. */
  messages: V2Message[];
  notifications(): V2Message[];
  ack(seq: number): void;
  replaceToken(token: string): void;
  closed: Promise<{ code: number; reason: string }>;
  closeInfo?: { code: number; reason: string };
  close(): void;
}

export interface V2Options {
  after?: number | string;
  epoch?: string;
  /** Acknowledge each notification as it arrives (default false). */
  autoAck?: boolean;
  /** The subprotocols offered (default ['voyage.v2']). */
  protocols?: string[];
  perMessageDeflate?: boolean;
}

/** Opens a protocol v2 stream; rejects with the HTTP status when the upgrade is refused. */
export function openV2(baseUrl: string, token: string, options: V2Options = {}): Promise<V2Client> {
  const query = new URLSearchParams();
  if (options.after !== undefined) query.set('after', String(options.after));
  if (options.epoch !== undefined) query.set('epoch', options.epoch);
  const url = `${baseUrl.replace(/^http/, 'ws')}${WS_PATH}${query.size > 0 ? `?${query}` : ''}`;
  const ws = new WebSocket(url, options.protocols ?? ['voyage.v2'], { headers: { Authorization: `Bearer ${token}` }, perMessageDeflate: options.perMessageDeflate ?? false });
  let resolveClosed!: (info: { code: number; reason: string }) => void;
  const client: V2Client = {
    ws,
    messages: [],
    notifications: () => client.messages.filter((message) => message.type === 'notification'),
    ack: (seq) => ws.send(JSON.stringify({ type: 'ack', seq })),
    replaceToken: (accessToken) => ws.send(JSON.stringify({ type: 'token', access_token: accessToken })),
    closed: new Promise((resolve) => (resolveClosed = resolve)),
    close: () => ws.terminate(),
  };
  open.add(client);
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString()) as V2Message;
    client.messages.push(message);
    if (options.autoAck && message.type === 'notification') client.ack(message.seq!);
  });
  ws.on('close', (code, reason) => resolveClosed((client.closeInfo = { code, reason: reason.toString() })));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(client));
    ws.once('unexpected-response', (_request, response) => {
      reject(Object.assign(new Error(`upgrade refused: ${response.statusCode}`), { status: response.statusCode }));
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

export interface SseEvent {
  type: string;
  id: string;
  data: string;
}

export interface SseClient {
  source: EventSource;
  events: SseEvent[];
  notifications(): Record<string, unknown>[];
  /** Each time the connection opened (EventSource reconnects by itself). */
  opens: number;
  /** The Last-Event-ID each request sent. */
  sentLastEventIds: (string | null)[];
  close(): void;
}

export interface SseOptions {
  /** The resume position on the first request (EventSource sends the last id on reconnects by itself). */
  lastEventId?: string;
  gzip?: boolean;
  /** Where to connect instead of the service (a proxy in front of it). */
  via?: string;
  /** `?epoch=E` on every request: the epoch of the database the client last read from. */
  epoch?: string;
}

/** Opens a server-sent events stream with EventSource; resolves once the first connection opened. */
export function openSse(baseUrl: string, token: string, options: SseOptions = {}): Promise<SseClient> {
  const client = { events: [] as SseEvent[], opens: 0, sentLastEventIds: [] as (string | null)[] } as SseClient;
  const query = options.epoch === undefined ? '' : `?${new URLSearchParams({ epoch: options.epoch })}`;
  const source = new EventSource(`${options.via ?? baseUrl}${SSE_PATH}${query}`, {
    fetch: (input, init) => {
      const headers = new Headers(init?.headers as ConstructorParameters<typeof Headers>[0]);
      headers.set('Authorization', `Bearer ${token}`);
      if (options.gzip) headers.set('Accept-Encoding', 'gzip');
      if (!headers.has('Last-Event-ID') && options.lastEventId !== undefined && client.opens === 0) headers.set('Last-Event-ID', options.lastEventId);
      client.sentLastEventIds.push(headers.get('Last-Event-ID'));
      return fetch(input, { ...init, headers });
    },
  });
  client.source = source;
  client.notifications = () => client.events.filter((event) => event.type === 'notification').map((event) => JSON.parse(event.data) as Record<string, unknown>);
  client.close = () => source.close();
  open.add(client);
  for (const type of ['notification', 'reset', 'token-expired', 'shutdown']) {
    source.addEventListener(type, (event) => client.events.push({ type, id: event.lastEventId, data: event.data }));
  }
  source.addEventListener('open', () => client.opens++);
  return new Promise((resolve, reject) => {
    source.addEventListener('open', () => resolve(client), { once: true });
    source.addEventListener('error', (event) => {
      if (client.opens === 0) reject(Object.assign(new Error(`event stream refused: ${(event as { code?: number }).code}`), { status: (event as { code?: number }).code }));
    });
  });
}

/** Polls until `condition` holds, or fails after `ms` naming `what`. */
export async function eventually(condition: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
