import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientToken, publish, PUBLISH_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const NUL = '\u0000';
const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields),
});

// PostgreSQL refuses U+0000 in text: each of these reached it and answered 500 before.
describe('a NUL character in an identifier or a stored text is refused before it reaches PostgreSQL', () => {
  let app: TestApp;
  let client: TestClient;
  let device: TestClient;
  let publishToken: string;

  beforeAll(async () => {
    app = await startTestApp();
    client = await createClient(app);
    device = await createClient(app, { grants: ['client_credentials'] });
    publishToken = await clientToken(app, await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] }), PUBLISH_SCOPE);
  });
  afterAll(() => app.close());

  const expectOAuthError = async (response: Response, status: number, error: string) => {
    expect(response.status).toBe(status);
    expect(((await response.json()) as { error: string }).error).toBe(error);
  };

  it('answers the helper routes as for an unknown client', async () => {
    await expectOAuthError(await fetch(`${app.baseUrl}/external/oauth2helper/config/%00`, { method: 'POST' }), 404, 'invalid_client');
    await expectOAuthError(await fetch(`${app.baseUrl}/external/oauth2helper/config/a%00b`, { method: 'POST' }), 404, 'invalid_client');
    expect((await fetch(`${app.baseUrl}/external/oauth2helper/code/get/%00?state=x`)).status).toBe(404);
  });

  it('answers the token, introspection and revocation routes with an RFC 6749 error', async () => {
    for (const path of ['/sso/token', '/public/api/oauth2/token']) {
      for (const grant_type of ['authorization_code', 'refresh_token', 'client_credentials']) {
        await expectOAuthError(await fetch(`${app.baseUrl}${path}`, form({ grant_type, client_id: NUL, client_secret: 'x', code: 'c', refresh_token: 'r' })), 400, 'invalid_request');
      }
    }
    await expectOAuthError(await fetch(`${app.baseUrl}/sso/token`, form({ grant_type: 'authorization_code', code: 'c', redirect_uri: `http://x/${NUL}`, client_id: client.id, client_secret: client.secret })), 400, 'invalid_request');
    for (const path of ['/sso/introspect', '/sso/revoke']) {
      await expectOAuthError(await fetch(`${app.baseUrl}${path}`, form({ token: 't', client_id: NUL, client_secret: 'x' })), 400, 'invalid_request');
    }
    // HTTP Basic with a percent-encoded NUL as the client id: an unknown client.
    const basic = `Basic ${Buffer.from('%00:secret').toString('base64')}`;
    const response = await fetch(`${app.baseUrl}/public/api/oauth2/token`, {
      ...form({ grant_type: 'client_credentials' }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
    });
    await expectOAuthError(response, 401, 'invalid_client');
    await expectOAuthError(await fetch(`${app.baseUrl}/public/api/oauth2/token`, form({ grant_type: 'client_credentials', client_id: device.id, client_secret: device.secret, scope: `a${NUL}` })), 400, 'invalid_request');
  });

  it('answers the login page with its 400 error page', async () => {
    const page = await fetch(`${app.baseUrl}/sso/authorize?response_type=code&client_id=%00&state=x`);
    expect(page.status).toBe(400);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const login = await signIn((await issueState(app, client.id)).authorize_url, { username: `admin${NUL}`, password: 'whatever password' });
    expect(login.status).toBe(400);
  });

  it('answers the publish route with field errors, stores nothing, and pushes no control characters', async () => {
    const fields = ['recipient', 'status', 'productName', 'origin', 'customerReferenceId'] as const;
    for (const field of fields) {
      const body = validNotification(device.id);
      const response = await publish(app, publishToken, { ...body, [field]: `${body[field]}${NUL}` });
      expect(response.status, field).toBe(400);
      expect(response.body.errors, field).toEqual([`${field} must not contain control characters`]);
    }
    for (const warnings of [[`half${NUL}`], ['bell\u0007'], ['escape\u001b[31m']]) {
      const response = await publish(app, publishToken, { ...validNotification(device.id), warnings });
      expect(response.status).toBe(400);
      expect(response.body.errors).toEqual(['warnings must not contain control characters other than tab and line breaks']);
    }
    const deliverables = await publish(app, publishToken, { ...validNotification(device.id), deliverables: [{ productType: `pdf${NUL}` }] });
    expect(deliverables.status).toBe(400);
    expect(await query(app.databaseUrl, 'SELECT 1 FROM notifications')).toEqual([]);
    // Line breaks and tabs in warnings are text, not control.
    expect((await publish(app, publishToken, { ...validNotification(device.id), warnings: ['line one\nline two\ttabbed'] })).status).toBe(202);
  });
});
