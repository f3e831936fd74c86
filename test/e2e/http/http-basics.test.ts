import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

describe('HTTP basics', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('answers unknown routes with { message, correlationId } and the request id header', async () => {
    const response = await fetch(`${app.baseUrl}/nowhere`);
    expect(response.status).toBe(404);
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await response.json()).toEqual({ message: 'Cannot GET /nowhere', correlationId: requestId });
  });

  it('keeps a plain incoming X-Request-Id and replaces a suspicious one', async () => {
    const kept = await fetch(`${app.baseUrl}/health/live`, { headers: { 'x-request-id': 'lb-1234.abc' } });
    expect(kept.headers.get('x-request-id')).toBe('lb-1234.abc');
    const replaced = await fetch(`${app.baseUrl}/health/live`, { headers: { 'x-request-id': 'a'.repeat(65) } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a malformed JSON body with 400 in the same format', async () => {
    const response = await fetch(`${app.baseUrl}/health/live`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ message: expect.any(String), correlationId: response.headers.get('x-request-id') });
  });

  it('never writes credentials, query strings or headers into the logs, yet ties lines to the request', async () => {
    const secrets = ['Bearer-s3cr3t-token-value', 'st4te-value-secret', 'basic-pw-value'];
    const response = await fetch(`${app.baseUrl}/nowhere?state=${secrets[1]}`, {
      headers: { authorization: `Bearer ${secrets[0]}`, cookie: `sid=${secrets[2]}` },
    });
    await response.text();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const requestId = response.headers.get('x-request-id');
    const lines = app.logs.filter((line) => line.reqId === requestId);
    // One line per request, written when it is answered.
    expect(lines.filter((line) => line.msg === 'request completed')).toHaveLength(1);
    expect(lines.filter((line) => line.msg === 'incoming request')).toHaveLength(0);
    expect(lines.find((line) => line.context === 'HttpExceptionFilter')).toMatchObject({ level: 'debug' });
    expect(lines.find((line) => line.msg === 'request completed')).toMatchObject({ req: { method: 'GET', path: '/nowhere' }, res: { statusCode: 404 } });
    const everything = JSON.stringify(app.logs);
    for (const secret of secrets) expect(everything).not.toContain(secret);
  });

  it('serves the OpenAPI description of its routes at /docs', async () => {
    const page = await fetch(`${app.baseUrl}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const document = (await (await fetch(`${app.baseUrl}/docs-json`)).json()) as { openapi: string; paths: Record<string, unknown> };
    expect(document.openapi).toMatch(/^3\./);
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/health', '/health/live', '/.well-known/jwks.json']));
  });

  it('documents the refusals of the OAuth form routes, the publish route, the login form and the device verification form in the OpenAPI description', async () => {
    type Operation = { responses: Record<string, unknown> };
    const { paths } = (await (await fetch(`${app.baseUrl}/docs-json`)).json()) as { paths: Record<string, Record<string, Operation>> };
    const statuses = (path: string, method: string) => Object.keys(paths[path][method].responses).sort();
    for (const path of ['/sso/token', '/sso/device_authorization', '/sso/introspect', '/sso/revoke', '/public/api/oauth2/token']) {
      expect(statuses(path, 'post')).toEqual(expect.arrayContaining(['400', '401', '413', '415']));
    }
    expect(statuses('/voyage/notification/v1/notifications', 'post')).toEqual(expect.arrayContaining(['400', '413']));
    for (const path of ['/sso/authorize', '/sso/device']) expect(statuses(path, 'post')).toEqual(expect.arrayContaining(['429', '503']));
  });

  it('describes the stream in words, defines the Bearer scheme the notification routes use, and documents the form posts as 200', async () => {
    type Operation = { summary?: string; responses: Record<string, unknown>; security?: Record<string, unknown>[] };
    const document = (await (await fetch(`${app.baseUrl}/docs-json`)).json()) as {
      info: { description: string };
      components: { securitySchemes?: Record<string, Record<string, string>> };
      paths: Record<string, Record<string, Operation>>;
    };
    expect(document.info.description).toContain('/voyage/notification/v1/ws/products');
    expect(document.info.description).toMatch(/1001[\s\S]*1008[\s\S]*4003/);
    expect(document.components.securitySchemes?.bearer).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(document.paths['/voyage/notification/v1/notifications'].post.security).toEqual([{ bearer: [] }]);
    for (const path of ['/sso/authorize', '/sso/device']) {
      expect(Object.keys(document.paths[path].post.responses), path).toContain('200');
      expect(Object.keys(document.paths[path].post.responses), path).not.toContain('201');
    }
    const summaries = Object.values(document.paths).flatMap((methods) => Object.values(methods).map((operation) => operation.summary ?? ''));
    expect(summaries.filter((summary) => /seed/i.test(summary))).toEqual([]);
  });

  it('serves the JWKS with public parts only and a JWK-set media type', async () => {
    const response = await fetch(`${app.baseUrl}/.well-known/jwks.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/jwk-set+json; charset=utf-8');
    const { keys } = (await response.json()) as { keys: Record<string, string>[] };
    expect(keys).toHaveLength(2);
    expect(Object.keys(keys[0]).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    expect(Object.keys(keys[1]).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
  });
});
