import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as connectTcp, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls } from 'node:tls';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { clientToken, PUBLISH_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { openStream } from '../../factories/stream.factory.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * What the HTTP edge does with hostile or odd input: Upgrade headers it does not serve, clients
 * that send slowly, deeply nested JSON, route-level errors on the OAuth routes, the CSRF cookie
 * behind TLS, and who may scrape /metrics. Raw sockets where fetch would hide the wire.
 */

const STREAM_PATH = '/voyage/notification/v1/ws/products';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const portOf = (app: TestApp) => Number(new URL(app.baseUrl).port);

interface RawAnswer {
  /** Undefined when nothing came back. */
  status?: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (the client never does before `timeoutMs`). */
  closed: boolean;
  /** From the first byte written until the server closed the connection (or the timeout). */
  ms: number;
}

/**
 * Writes `chunks` on a fresh connection, `gapMs` apart, and reads until the server closes it or
 * `timeoutMs` passes. The client never closes first, so `closed` tells that the server did.
 */
function exchange(port: number, chunks: string[], options: { gapMs?: number; timeoutMs?: number; tls?: boolean } = {}): Promise<RawAnswer> {
  const { gapMs = 0, timeoutMs = 5000 } = options;
  return new Promise((resolve) => {
    const socket: Socket = options.tls ? connectTls({ port, host: '127.0.0.1', rejectUnauthorized: false }) : connectTcp(port, '127.0.0.1');
    const started = Date.now();
    let received = '';
    let closed = false;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...parseAnswer(received), closed, ms: Date.now() - started });
    };
    const timer = setTimeout(finish, timeoutMs);
    socket.on('data', (data) => (received += data.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      finish();
    });
    socket.once(options.tls ? 'secureConnect' : 'connect', async () => {
      for (const chunk of chunks) {
        if (closed) return;
        socket.write(chunk);
        if (gapMs > 0) await sleep(gapMs);
      }
    });
  });
}

function parseAnswer(text: string): Pick<RawAnswer, 'status' | 'headers' | 'body'> {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { headers: {}, body: text };
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]), headers, body: text.slice(end + 4) };
}

const json = (answer: RawAnswer) => JSON.parse(answer.body) as Record<string, unknown>;

/** A request as bytes: request line, headers, blank line, body. */
const request = (line: string, headers: Record<string, string>, body = '') =>
  `${line}\r\n${Object.entries({ Host: 'voyage.test', ...headers, ...(body ? { 'Content-Length': String(Buffer.byteLength(body)) } : {}) })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n${body}`;

const H2C = { Connection: 'Upgrade, HTTP2-Settings', Upgrade: 'h2c', 'HTTP2-Settings': 'AAMAAABkAAQCAAAAAAIAAAAA' };
const WEBSOCKET = { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' };

/** `{message, correlationId}` with the id the response carries. */
function expectHttpError(answer: RawAnswer, status: number, message?: string) {
  expect(answer.status, answer.body).toBe(status);
  expect(json(answer)).toEqual({ message: message ?? expect.any(String), correlationId: answer.headers['x-request-id'] });
}

describe('requests with an Upgrade header other than the stream', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('answers GET /health with Upgrade: h2c over HTTP/1.1 as without it, then closes the connection', async () => {
    const answer = await exchange(portOf(app), [request('GET /health HTTP/1.1', H2C)]);
    expect(answer.status).toBe(200);
    expect(answer.headers.connection).toBe('close');
    expect(json(answer)).toMatchObject({ status: 'up' });
    expect(answer.closed).toBe(true);
  });

  it('answers h2c to an unknown path with the usual 404, and to an OAuth route in the OAuth format', async () => {
    expectHttpError(await exchange(portOf(app), [request('GET /nowhere HTTP/1.1', H2C)]), 404, 'Cannot GET /nowhere');
    const client = await createClient(app);
    const config = await exchange(portOf(app), [request(`POST /external/oauth2helper/config/${client.id} HTTP/1.1`, H2C)]);
    expect(config.status).toBe(200);
    expect(json(config)).toEqual({
      authorize_url: expect.any(String),
      code_url: expect.any(String),
      accesstoken_request_url: expect.any(String),
      interval: expect.any(Number),
      expires_in: expect.any(Number),
    });
  });

  it('refuses an upgrade request with a body (it cannot be read) with a 400 in the route format', async () => {
    const form = 'grant_type=client_credentials&client_id=x&client_secret=y';
    const token = await exchange(portOf(app), [request('POST /public/api/oauth2/token HTTP/1.1', { ...H2C, 'Content-Type': 'application/x-www-form-urlencoded' }, form)]);
    expect(token.status).toBe(400);
    expect(token.headers['cache-control']).toBe('no-store');
    expect(json(token)).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
    expect(token.closed).toBe(true);
    const chunked = await exchange(portOf(app), [
      request('POST /health/live HTTP/1.1', { ...H2C, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }) + '2\r\n{}\r\n0\r\n\r\n',
    ]);
    expectHttpError(chunked, 400);
    expect(chunked.closed).toBe(true);
  });

  it('answers a WebSocket upgrade to any other path with an HTTP 404 in the usual format', async () => {
    for (const path of ['/nowhere', '/health', `${STREAM_PATH}/other`]) {
      const answer = await exchange(portOf(app), [request(`GET ${path} HTTP/1.1`, WEBSOCKET)]);
      expectHttpError(answer, 404, `No WebSocket endpoint at ${path}`);
      expect(answer.closed).toBe(true);
    }
  });

  it('answers a CONNECT (it is no proxy) with a 404 instead of dropping the connection', async () => {
    const answer = await exchange(portOf(app), [request('CONNECT example.com:443 HTTP/1.1', { Host: 'example.com:443' })]);
    expectHttpError(answer, 404);
    expect(answer.closed).toBe(true);
  });

  it('still checks the token of a stream upgrade before the handshake', async () => {
    const refused = await exchange(portOf(app), [request(`GET ${STREAM_PATH} HTTP/1.1`, WEBSOCKET)]);
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toBe('Bearer realm="voyage-connect"');
    const client = await createClient(app, { grants: ['client_credentials'] });
    const stream = await openStream(app.baseUrl, await clientToken(app, client));
    await stream.close();
  });

  it('answers what cannot be routed in the service format: headers too large (431), no HTTP (400), an undecodable path (400)', async () => {
    const huge = await exchange(portOf(app), [request('GET /health HTTP/1.1', { 'X-Big': 'x'.repeat(20_000) })]);
    expect(huge.status).toBe(431);
    expect(json(huge)).toEqual({ message: 'The request headers are too large', correlationId: expect.any(String) });
    expect(huge.closed).toBe(true);
    const garbage = await exchange(portOf(app), ['\u0016\u0003\u0001 not http at all\r\n\r\n']);
    expect(garbage.status).toBe(400);
    expect(json(garbage)).toEqual({ message: 'The request could not be read', correlationId: expect.any(String) });
    const badUrl = await fetch(`${app.baseUrl}/external/oauth2helper/code/get/%zz?state=x`);
    expect(badUrl.status).toBe(400);
    expect(await badUrl.json()).toEqual({ message: 'The request URL could not be read', correlationId: badUrl.headers.get('x-request-id') ?? expect.any(String) });
  });

  it('leaves no connection behind', async () => {
    const server = app.app.getHttpServer();
    const open = () => new Promise<number>((resolve) => server.getConnections((_error: Error | null, count: number) => resolve(count)));
    const before = await open();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        exchange(portOf(app), [request(i % 2 ? 'GET /health/live HTTP/1.1' : 'GET /nowhere HTTP/1.1', i % 3 ? H2C : WEBSOCKET)]),
      ),
    );
    expect(answers.map((answer) => answer.closed)).toEqual(Array(20).fill(true));
    await expect.poll(open, { timeout: 2000 }).toBe(before);
    expect(app.logs.filter((line) => line.level === 'error' || line.level === 'fatal')).toEqual([]);
  });
});

describe('slow clients (HTTP_HEADERS_TIMEOUT_MS=1000, HTTP_RECEIVE_TIMEOUT_MS=2000)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_RECEIVE_TIMEOUT_MS: '2000' });
  });
  afterAll(() => app.close());

  it('answers 408 and disconnects a client that sends its headers one byte at a time', async () => {
    const bytes = [...request('GET /health/live HTTP/1.1', { 'X-Padding': 'x'.repeat(40) })];
    const answer = await exchange(portOf(app), bytes, { gapMs: 100, timeoutMs: 6000 });
    expect(answer.status).toBe(408);
    expect(Object.keys(json(answer)).sort()).toEqual(['correlationId', 'message']);
    expect(answer.closed).toBe(true);
    expect(answer.ms).toBeGreaterThanOrEqual(900);
    expect(answer.ms).toBeLessThan(2000);
  });

  it('answers 408 and disconnects a client that sends its body one byte at a time', async () => {
    const body = 'grant_type=client_credentials&client_id=slow&client_secret=slow';
    const head = request('POST /public/api/oauth2/token HTTP/1.1', { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': String(body.length) });
    const answer = await exchange(portOf(app), [head, ...body], { gapMs: 100, timeoutMs: 8000 });
    expect(answer.status).toBe(408);
    expect(answer.closed).toBe(true);
    expect(answer.ms).toBeGreaterThanOrEqual(1900);
    expect(answer.ms).toBeLessThan(3000);
  });

  it('disconnects a connection that never sends a byte', async () => {
    const answer = await exchange(portOf(app), [], { timeoutMs: 6000 });
    expect(answer.closed).toBe(true);
    expect(answer.ms).toBeLessThan(2000);
  });

  it('lets a keep-alive connection idle past the headers timeout between requests, and serves the next one', async () => {
    const answer = await exchange(portOf(app), [request('GET /health/live HTTP/1.1', {}), request('GET /health/live HTTP/1.1', { Connection: 'close' })], {
      gapMs: 1500,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatch(/^\{"status":"up"\}HTTP\/1\.1 200 OK\r\n/); // the second answer follows the first one's body
    expect(answer.closed).toBe(true);
  });

  it('keeps an open stream past the request timeout (it is no longer an HTTP request)', async () => {
    const client = await createClient(app, { grants: ['client_credentials'] });
    const stream = await openStream(app.baseUrl, await clientToken(app, client));
    try {
      await sleep(3500);
      expect(stream.socket.readyState).toBe(WebSocket.OPEN);
      const pong = new Promise((resolve) => stream.socket.once('pong', resolve));
      stream.socket.ping();
      await pong;
    } finally {
      await stream.close();
    }
  });
});

describe('slow clients over TLS', () => {
  let dir: string;
  let app: TestApp;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'voyage-connect-hardening-'));
    const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert,
    ]);
    app = await startTestApp({ TLS_CERT_FILE: cert, TLS_KEY_FILE: key, HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_RECEIVE_TIMEOUT_MS: '2000' });
  });
  afterAll(async () => {
    await app?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves https, answers h2c over HTTP/1.1 and cuts a client that trickles its headers', async () => {
    const upgrade = await exchange(portOf(app), [request('GET /health/live HTTP/1.1', H2C)], { tls: true });
    expect(upgrade.status).toBe(200);
    expect(upgrade.closed).toBe(true);
    const slow = await exchange(portOf(app), [...request('GET /health/live HTTP/1.1', { 'X-Padding': 'x'.repeat(40) })], { tls: true, gapMs: 100, timeoutMs: 6000 });
    expect(slow.status).toBe(408);
    expect(slow.closed).toBe(true);
    expect(slow.ms).toBeLessThan(2000);
  });
});

describe('deeply nested JSON', () => {
  let app: TestApp;
  let publishToken: string;
  let recipient: TestClient;
  beforeAll(async () => {
    app = await startTestApp();
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    publishToken = await clientToken(app, publisher, PUBLISH_SCOPE);
    recipient = await createClient(app, { grants: ['client_credentials'] });
  });
  afterAll(() => app.close());

  const deepArray = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  /** A valid publish body whose `field` is replaced by the raw JSON `value`. */
  const bodyWith = (field: string, value: string) =>
    JSON.stringify({ ...validNotification(recipient.id), [field]: '\u0000placeholder' }).replace('"\\u0000placeholder"', value);

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${app.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

  it.each([
    ['a 5,000-deep array in a field', () => bodyWith('warnings', deepArray(5000))],
    ['a 3,000-deep object in a field', () => bodyWith('deliverables', deepObject(3000))],
    ['a 3,000-deep object in an unknown field', () => bodyWith('extra', deepObject(3000))],
    ['a 5,000-deep array as the whole body', () => deepArray(5000)],
    ['a 3,000-deep object as the whole body', () => deepObject(3000)],
    ['33 levels, one more than allowed', () => bodyWith('extra', deepArray(32))],
  ])('refuses %s at the publish route with 400 {message, correlationId}', async (_case, body) => {
    const response = await post('/voyage/notification/v1/notifications', body(), { authorization: `Bearer ${publishToken}` });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ message: 'JSON body nested deeper than 32 levels', correlationId: response.headers.get('x-request-id') });
  });

  it('accepts nesting within the bound (the unknown field is stripped)', async () => {
    const response = await post('/voyage/notification/v1/notifications', bodyWith('extra', deepArray(31)), { authorization: `Bearer ${publishToken}` });
    expect(response.status).toBe(202);
  });

  it('still refuses prototype poisoning', async () => {
    const response = await post('/voyage/notification/v1/notifications', bodyWith('extra', '{"__proto__":{"polluted":true}}'), {
      authorization: `Bearer ${publishToken}`,
    });
    expect(response.status).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('answers deep JSON on an OAuth route with invalid_request', async () => {
    const response = await post('/sso/token', deepArray(5000));
    expect(response.status).toBe(400);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ error: 'invalid_request', error_description: 'the request could not be read' });
  });
});

describe('route-level errors on the OAuth routes', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  const send = (method: string, path: string, headers: Record<string, string> = {}, body?: string) => fetch(`${app.baseUrl}${path}`, { method, headers, body });

  async function expectOAuthError(response: Response, status: number) {
    expect(response.status).toBe(status);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
  }

  it('keeps 413 for a body over the limit', async () => {
    for (const path of ['/sso/token', '/public/api/oauth2/token', '/sso/introspect', '/sso/revoke']) {
      await expectOAuthError(await send('POST', path, { 'content-type': 'application/x-www-form-urlencoded' }, `token=${'x'.repeat(70_000)}`), 413);
    }
  });

  it('keeps 415 for an unsupported media type', async () => {
    await expectOAuthError(await send('POST', '/sso/token', { 'content-type': 'text/csv' }, 'a,b'), 415);
  });

  it('answers 405 for a method the route does not have, and 404 for a path no route has', async () => {
    await expectOAuthError(await send('GET', '/sso/token'), 405);
    await expectOAuthError(await send('GET', '/external/oauth2helper/nothing'), 404);
  });

  it('keeps 400 for malformed JSON', async () => {
    await expectOAuthError(await send('POST', '/sso/token', { 'content-type': 'application/json' }, '{nope'), 400);
  });

  it.each([200, 5000])('answers a %i-character client_id exactly as an unknown client', async (length) => {
    const long = 'a'.repeat(length);
    const [config, unknown] = [await send('POST', `/external/oauth2helper/config/${long}`), await send('POST', '/external/oauth2helper/config/unknown')];
    expect(config.status).toBe(404);
    expect(config.headers.get('cache-control')).toBe('no-store');
    expect(await config.json()).toEqual(await unknown.json());
    const [poll, unknownPoll] = [await send('GET', `/external/oauth2helper/code/get/${long}?state=x`), await send('GET', '/external/oauth2helper/code/get/unknown?state=x')];
    expect(poll.status).toBe(404);
    expect(await poll.json()).toEqual(await unknownPoll.json());
  });
});

describe('the CSRF cookie of the login page', () => {
  let app: TestApp;
  let client: TestClient;
  beforeAll(async () => {
    app = await startTestApp({ TRUST_PROXY: 'true' });
    client = await createClient(app);
  });
  afterAll(() => app.close());

  const HTTPS = { 'x-forwarded-proto': 'https' };
  const cookieOf = (response: Response) => response.headers.get('set-cookie')!.split(/;\s*/);
  const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1].replaceAll('&amp;', '&');

  function submit(html: string, cookie: string, user: { username: string; password: string }) {
    return fetch(`${app.baseUrl}/sso/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...HTTPS, 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams({
        response_type: 'code',
        client_id: field(html, 'client_id'),
        state: field(html, 'state'),
        csrf_token: field(html, 'csrf_token'),
        ...user,
      }),
    });
  }

  it('is __Host-vc_csrf, Secure, Path=/ and without Domain over https (X-Forwarded-Proto from a trusted proxy)', async () => {
    const page = await fetch((await issueState(app, client.id)).authorize_url, { headers: HTTPS });
    const [pair, ...attributes] = cookieOf(page);
    expect(pair).toMatch(/^__Host-vc_csrf=[A-Za-z0-9_-]{43}$/);
    expect(attributes.sort()).toEqual(['HttpOnly', 'Path=/', 'SameSite=Strict', 'Secure']);
  });

  it('stays vc_csrf scoped to /sso/authorize over plain http', async () => {
    const page = await fetch((await issueState(app, client.id)).authorize_url);
    const [pair, ...attributes] = cookieOf(page);
    expect(pair).toMatch(/^vc_csrf=/);
    expect(attributes.sort()).toEqual(['HttpOnly', 'Path=/sso/authorize', 'SameSite=Strict']);
  });

  it('is read under the name of the protocol: over https only the __Host- cookie signs in', async () => {
    const user = await createUser(app);
    const page = await fetch((await issueState(app, client.id)).authorize_url, { headers: HTTPS });
    const html = await page.text();
    const token = cookieOf(page)[0].split('=')[1];
    const plainName = await submit(html, `vc_csrf=${token}`, user);
    expect(plainName.status).toBe(403);
    const retry = await plainName.text();
    expect(retry).toContain('Your browser did not send this page&#39;s cookie: allow cookies for this site. Please sign in again.');
    const signedIn = await submit(retry, cookieOf(plainName)[0], user);
    expect(signedIn.status).toBe(200);
    expect(await signedIn.text()).toContain('Return to your device');
  });
});

describe('the cookies behind a TLS proxy that TRUST_PROXY does not name', () => {
  let app: TestApp;
  let client: TestClient;
  beforeAll(async () => {
    // The browser only knows https://sso.example; the service hears plain http from the proxy.
    app = await startTestApp({ IDENTITY_URL: 'https://sso.example' });
    client = await createClient(app);
  });
  afterAll(() => app.close());

  const setCookie = (response: Response, name: string) => response.headers.getSetCookie().find((line) => line.startsWith(`${name}=`));

  it('are __Host- and Secure when IDENTITY_URL is https: the CSRF cookie, and the session cookie a sign-in leaves', async () => {
    const page = await fetch((await issueState(app, client.id)).authorize_url.replace('https://sso.example', app.baseUrl));
    const csrf = setCookie(page, '__Host-vc_csrf');
    expect(csrf).toMatch(/; Secure/i);
    expect(setCookie(page, 'vc_csrf')).toBeUndefined();
    const html = await page.text();
    const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1].replaceAll('&amp;', '&');
    const signedIn = await fetch(`${app.baseUrl}/sso/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: csrf!.split(';')[0] },
      body: new URLSearchParams({ response_type: 'code', client_id: client.id, state: field('state'), csrf_token: field('csrf_token'), ...(await createUser(app)) }),
    });
    expect(signedIn.status).toBe(200);
    expect(setCookie(signedIn, '__Host-vc_session')).toMatch(/; Secure/i);
    expect(setCookie(signedIn, 'vc_session')).toBeUndefined();
  });
});

describe('/metrics', () => {
  it('answers without the database: 20 scrapes while the only pooled connection is held', async () => {
    const app = await startTestApp({ DATABASE_POOL_SIZE: '1', DATABASE_CONNECT_TIMEOUT_MS: '3000' });
    const runner = app.get(DataSource).createQueryRunner();
    try {
      await runner.connect();
      const started = Date.now();
      for (let i = 0; i < 20; i++) {
        const response = await fetch(`${app.baseUrl}/metrics`);
        expect(response.status).toBe(200);
        await response.text();
      }
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await runner.release();
      await app.close();
    }
  });

  describe('with METRICS_ALLOWED_CIDRS', () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await startTestApp({ METRICS_ALLOWED_CIDRS: '10.0.0.0/8, 192.0.2.7,2001:db8::/32', TRUST_PROXY: '127.0.0.1' });
    });
    afterAll(() => app.close());

    const scrape = (from?: string) => fetch(`${app.baseUrl}/metrics`, { headers: from ? { 'x-forwarded-for': from } : {} });

    it('serves the listed addresses and ranges, IPv4 and IPv6', async () => {
      for (const address of ['10.1.2.3', '192.0.2.7', '2001:db8::1', '::ffff:10.9.9.9']) expect((await scrape(address)).status, address).toBe(200);
    });

    it('answers 403 {message, correlationId} to any other address', async () => {
      for (const address of [undefined, '11.0.0.1', '192.0.2.8', '2001:db9::1']) {
        const response = await scrape(address);
        expect(response.status, address).toBe(403);
        expect(await response.json()).toEqual({ message: expect.any(String), correlationId: response.headers.get('x-request-id') });
      }
    });
  });

  it('refuses to start with an entry that is not an address or range', async () => {
    await expect(startTestApp({ METRICS_ALLOWED_CIDRS: '10.0.0.0/8, 10.0.0.0/33' })).rejects.toThrow(/METRICS_ALLOWED_CIDRS.*10\.0\.0\.0\/33/);
  });
});

interface TrickleAnswer extends Pick<RawAnswer, 'status' | 'headers' | 'body'> {
  /** Milliseconds from the answer's headers until the connection was gone; undefined when the server kept it. */
  closedAfterAnswerMs?: number;
}

/**
 * Sends `head` (a request announcing a body) and then the body a byte every 50 ms, going on after
 * the answer, and after the server's FIN too (the socket is half-open), as a trickling client
 * would, until the connection is gone — the server destroyed its end — or `timeoutMs` passes.
 */
function trickle(port: number, head: string, timeoutMs: number): Promise<TrickleAnswer> {
  return new Promise((resolve) => {
    const socket = connectTcp({ port, host: '127.0.0.1', allowHalfOpen: true });
    let received = '';
    let answeredAt: number | undefined;
    const finish = (closed: boolean) => {
      clearInterval(drip);
      clearTimeout(timer);
      socket.destroy();
      const closedAfterAnswerMs = closed && answeredAt !== undefined ? Date.now() - answeredAt : undefined;
      resolve({ ...parseAnswer(received), closedAfterAnswerMs });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    const drip = setInterval(() => socket.writable && socket.write('x'), 50);
    socket.on('data', (data) => {
      received += data.toString('latin1');
      if (answeredAt === undefined && received.includes('\r\n\r\n')) answeredAt = Date.now();
    });
    socket.on('error', () => {});
    socket.on('close', () => finish(true));
    socket.write(`${head}grant_type=`);
  });
}

describe('a client that trickles a body it was already answered for', () => {
  let app: TestApp;
  beforeAll(async () => {
    // The receive timeout is far away: it is not what closes these connections.
    app = await startTestApp({ REQUEST_TIMEOUT_MS: '1000', HTTP_RECEIVE_TIMEOUT_MS: '60000' });
  });
  afterAll(() => app.close());

  const form = (length: number, contentType = 'application/x-www-form-urlencoded') =>
    request('POST /sso/token HTTP/1.1', { 'Content-Type': contentType, 'Content-Length': String(length) });

  it.each([
    ['413 to a Content-Length over the limit', form(100_000), 413],
    ['415 to a media type it does not read', form(60_000, 'text/csv'), 415],
    ['503 at the request deadline (REQUEST_TIMEOUT_MS)', form(60_000), 503],
  ])('answers %s with Connection: close and drops the connection within 2 s while the client goes on sending', async (_case, head, status) => {
    const answer = await trickle(portOf(app), head, 8000);
    expect(answer.status).toBe(status);
    expect(answer.headers.connection).toBe('close');
    expect(answer.closedAfterAnswerMs).toBeDefined();
    expect(answer.closedAfterAnswerMs).toBeLessThan(2000);
  });

  it('keeps a keep-alive connection open after a request whose body it read', async () => {
    const body = 'grant_type=nothing';
    const answer = await exchange(portOf(app), [request('POST /sso/token HTTP/1.1', { 'Content-Type': 'application/x-www-form-urlencoded' }, body)], { timeoutMs: 1500 });
    expect(answer.status).toBe(400);
    expect(answer.headers.connection).toBe('keep-alive');
    expect(answer.closed).toBe(false);
  });
});
