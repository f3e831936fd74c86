import { createServer, request, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { clientToken, PUBLISH_SCOPE, publish, pushedMessage, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient } from '../../factories/oauth.factory.js';
import { openStream } from '../../factories/stream.factory.js';
import { ensureNginx, type Nginx, startNginx } from '../../setup/nginx.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * The real reverse proxy the stream tests put in front of the service (test/setup/nginx.ts): by
 * default a proxy that refuses WebSocket, as many corporate proxies do; `websocket: true` passes
 * the upgrade. What a client sees through each, that a restarted proxy answers on its port, and
 * that the proxy holds back and times out a stream as the stream tests need it to.
 */

const STREAM_PATH = '/voyage/notification/v1/ws/products';

const nginx = ensureNginx();
const missing = 'missing' in nginx ? nginx.missing : undefined;
if (missing) console.warn(`nginx-proxy.test.ts is skipped: ${missing}`);

/** The answer to a WebSocket handshake: 101 and the open socket, or the HTTP status it got instead. */
function handshake(baseUrl: string, token: string): Promise<{ status: number; socket?: WebSocket }> {
  const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}${STREAM_PATH}`, { headers: { authorization: `Bearer ${token}` } });
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve({ status: 101, socket }));
    socket.once('unexpected-response', (_request, response) => {
      resolve({ status: response.statusCode! });
      socket.terminate();
    });
    socket.once('error', reject);
  });
}

describe.skipIf(missing !== undefined)(missing ? `nginx in front of the service — SKIPPED: ${missing}` : 'nginx in front of the service', () => {
  let app: TestApp;
  let proxy: Nginx;
  let websocketProxy: Nginx;
  let subscriber: { id: string; token: string };

  beforeAll(async () => {
    app = await startTestApp();
    const upstreamPort = Number(new URL(app.baseUrl).port);
    proxy = await startNginx({ upstreamPort });
    websocketProxy = await startNginx({ upstreamPort, websocket: true });
    const client = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    subscriber = { id: client.id, token: await clientToken(app, client, SUBSCRIBE_SCOPE) };
  });
  afterAll(async () => {
    await proxy?.stop();
    await websocketProxy?.stop();
    await app?.close();
  });

  it('passes plain HTTP requests: the OpenID discovery document and /health answer through it', async () => {
    const discovery = await fetch(`${proxy.baseUrl}/.well-known/openid-configuration`);
    expect(discovery.status).toBe(200);
    expect(((await discovery.json()) as { issuer: string }).issuer).toBe(app.baseUrl);
    expect((await fetch(`${proxy.baseUrl}/health`)).status).toBe(200);
  });

  it('refuses the WebSocket stream (the handshake is not upgraded), which a proxy passing the upgrade opens and delivers on', async () => {
    const refused = await handshake(proxy.baseUrl, subscriber.token);
    // Not upgraded, the request reaches the service as a plain GET, which it refuses (404 today).
    expect(refused.status).not.toBe(101);
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    expect(refused.socket).toBeUndefined();

    const stream = await openStream(websocketProxy.baseUrl, subscriber.token);
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    const body = validNotification(subscriber.id);
    expect((await publish(app, await clientToken(app, publisher, PUBLISH_SCOPE), body)).status).toBe(202);
    expect(await stream.received(1)).toEqual([pushedMessage(body)]);
    await stream.close();
  });

  it('restart() ends the connections through it and answers again on the same port', async () => {
    const stream = await openStream(websocketProxy.baseUrl, subscriber.token);
    const { port } = websocketProxy;
    await websocketProxy.restart();
    expect((await stream.closed).code).toBe(1006); // cut, without a close frame
    expect(websocketProxy.port).toBe(port);
    expect((await fetch(`${websocketProxy.baseUrl}/health`)).status).toBe(200);
    const again = await openStream(websocketProxy.baseUrl, subscriber.token);
    await again.close();
  });
});

/** Each arrival of a streamed response through the proxy: milliseconds since the request, and the text so far. */
function arrivals(baseUrl: string, path: string): Promise<{ at: number; text: string }[]> {
  const started = Date.now();
  const seen: { at: number; text: string }[] = [];
  return new Promise((resolve, reject) => {
    request(`${baseUrl}${path}`, { headers: { 'accept-encoding': 'gzip' } }, (response) => {
      // Compressed or not, what matters is when the bytes come.
      response.on('data', (chunk: Buffer) => seen.push({ at: Date.now() - started, text: chunk.toString('latin1') }));
      response.on('end', () => resolve(seen));
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

describe.skipIf(missing !== undefined)('the proxy as the stream tests need it', () => {
  let upstream: Server;
  let proxy: Nginx;

  beforeAll(async () => {
    // An event stream that trickles: an event at once, one at 400 ms, the end at 1 s; silent forever on /silent.
    upstream = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', ...(req.url === '/unbuffered' ? { 'x-accel-buffering': 'no' } : {}) });
      res.write('data: first\n\n');
      if (req.url === '/silent') return;
      setTimeout(() => res.write('data: second\n\n'), 400);
      setTimeout(() => res.end('data: last\n\n'), 1_000);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    proxy = await startNginx({ upstreamPort: (upstream.address() as { port: number }).port, readTimeoutSeconds: 1 });
  });
  afterAll(async () => {
    await proxy?.stop();
    upstream?.closeAllConnections();
    upstream?.close();
  });

  it('holds a stream back until it ends, unless the response says X-Accel-Buffering: no', async () => {
    const held = await arrivals(proxy.baseUrl, '/buffered');
    expect(held[0].at).toBeGreaterThanOrEqual(900);
    const passed = await arrivals(proxy.baseUrl, '/unbuffered');
    expect(passed[0].at).toBeLessThan(300);
  });

  it('ends a stream that stays silent past proxy_read_timeout', async () => {
    const started = Date.now();
    await arrivals(proxy.baseUrl, '/silent').catch(() => []);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
