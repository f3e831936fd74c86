import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../factories/oauth.factory.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';

/** A JWT-looking value whose payload is not JSON: decoders throw before any signature check. */
const UNDECODABLE = `${Buffer.from('{"alg":"ES256","typ":"JWT","kid":"x"}').toString('base64url')}.${Buffer.from('not json').toString('base64url')}.c2ln`;

describe('errors raised before a handler runs, on the OAuth routes', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it.each([
    ['malformed JSON', { 'content-type': 'application/json' }, '{nope', 400, 'the request could not be read'],
    ['an unsupported media type', { 'content-type': 'text/csv' }, 'a,b', 415, 'unsupported content type: send application/x-www-form-urlencoded'],
    ['a body over the size limit', { 'content-type': 'application/x-www-form-urlencoded' }, `grant_type=${'x'.repeat(70_000)}`, 413, 'the request body is too large'],
  ])('answers %s at /sso/token with an RFC 6749 invalid_request keeping its status, never cached', async (_case, headers, body, status, description) => {
    const response = await fetch(`${app.baseUrl}/sso/token`, { method: 'POST', headers, body });
    expect(response.status).toBe(status);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ error: 'invalid_request', error_description: description });
  });

  it('keeps the { message, correlationId } format on other routes', async () => {
    const response = await fetch(`${app.baseUrl}/health/live`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    expect(response.status).toBe(400);
    expect(Object.keys((await response.json()) as object).sort()).toEqual(['correlationId', 'message']);
  });

  it('treats an undecodable state as a bad state (400), not a server error', async () => {
    const client = await createClient(app);
    const poll = await fetch(`${app.baseUrl}/external/oauth2helper/code/get/${client.id}?state=${UNDECODABLE}`);
    expect(poll.status).toBe(400);
    expect(((await poll.json()) as { error: string }).error).toBe('invalid_request');
    const page = await fetch(`${app.baseUrl}/sso/authorize?response_type=code&client_id=${client.id}&state=${UNDECODABLE}`);
    expect(page.status).toBe(400);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
  });
});
