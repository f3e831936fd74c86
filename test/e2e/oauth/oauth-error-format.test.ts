import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../factories/oauth.factory.js';
import { credentials, postForm } from '../../factories/token-flow.factory.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/** A JWT-looking value whose payload is not JSON: decoders throw before any signature check. */
/** RFC 6749 §5.2: error_description = 1*( %x20-21 / %x23-5B / %x5D-7E ). */
const DESCRIPTION_CHARACTERS = /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/;
/** A quote, a backslash, control characters, and non-ASCII up to a character outside the BMP. */
const HOSTILE = 'a"b\\c\r\n\t\x01\x7Fé€😀';
/** HOSTILE as the description quotes it: percent-encoded UTF-8, as in a form body. */
const HOSTILE_QUOTED = 'a%22b%5Cc%0D%0A%09%01%7F%C3%A9%E2%82%AC%F0%9F%98%80';

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

describe('error_description when the request is quoted in it (RFC 6749 §5.2 characters)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  const expectDescription = (body: unknown, error: string) => {
    const { error: code, error_description: description } = body as { error: string; error_description: string };
    expect(code).toBe(error);
    expect(description).toMatch(DESCRIPTION_CHARACTERS);
    expect(description.length).toBeLessThanOrEqual(200);
    return description;
  };

  it('quotes a grant_type with a quote, a backslash, control and non-ASCII characters percent-encoded', async () => {
    const response = await postForm(app, '/sso/token', { grant_type: HOSTILE });
    expect(response.status).toBe(400);
    expect(expectDescription(response.body, 'unsupported_grant_type')).toBe(`grant_type ${HOSTILE_QUOTED} is not supported here`);
  });

  it('quotes a percent sign as %25, so the quote reads back unambiguously', async () => {
    const response = await postForm(app, '/sso/token', { grant_type: '100%22' });
    expect(expectDescription(response.body, 'unsupported_grant_type')).toBe('grant_type 100%2522 is not supported here');
  });

  it('cuts a very long grant_type short instead of echoing it whole', async () => {
    const response = await postForm(app, '/public/api/oauth2/token', { grant_type: `${'x'.repeat(20_000)}"` });
    expect(response.status).toBe(400);
    const description = expectDescription(response.body, 'unsupported_grant_type');
    expect(description).toMatch(/^grant_type x+\.\.\.$/);
  });

  it('quotes the name of a repeated parameter and of a parameter holding NUL the same way', async () => {
    const name = encodeURIComponent(HOSTILE);
    const repeated = await postForm(app, '/sso/token', `${name}=1&${name}=2`);
    expect(expectDescription(repeated.body, 'invalid_request')).toBe(`parameter ${HOSTILE_QUOTED} is repeated`);
    const nul = await postForm(app, '/sso/device_authorization', `${name}=%00`);
    expect(expectDescription(nul.body, 'invalid_request')).toBe(`parameter ${HOSTILE_QUOTED} contains a NUL character`);
  });

  it('quotes a repeated query parameter of the code poll the same way', async () => {
    const client = await createClient(app);
    const name = encodeURIComponent(HOSTILE);
    const poll = await fetch(`${app.baseUrl}/external/oauth2helper/code/get/${client.id}?${name}=1&${name}=2`);
    expect(poll.status).toBe(400);
    expect(expectDescription(await poll.json(), 'invalid_request')).toBe(`parameter ${HOSTILE_QUOTED} is repeated`);
  });

  it('cuts a very long refused scope short', async () => {
    const client = await createClient(app, { grants: ['client_credentials'], scopes: ['a'] });
    const response = await postForm(app, '/public/api/oauth2/token', { grant_type: 'client_credentials', ...credentials(client), scope: `a ${'s'.repeat(20_000)}` });
    expect(response.status).toBe(400);
    expect(expectDescription(response.body, 'invalid_scope')).toMatch(/^scope not allowed for this client: s+\.\.\.$/);
  });
});
