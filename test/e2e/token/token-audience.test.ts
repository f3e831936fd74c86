import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientToken, publish, PUBLISH_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { freePort } from '../../setup/free-port.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const OTHER_API = 'https://other-api.example.com';

/** A client-credentials token request naming `resource` (RFC 8707). */
function askFor(app: TestApp, client: TestClient, scope: string, resource: string): Promise<Response> {
  return fetch(`${app.baseUrl}/public/api/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret, scope, resource }),
  });
}

/** A token for `resource`, which becomes its `aud`. */
async function tokenFor(app: TestApp, client: TestClient, scope: string, resource: string): Promise<{ token: string; resource: string }> {
  const response = await askFor(app, client, scope, resource);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { access_token: string; resource: string };
  return { token: body.access_token, resource: body.resource };
}

const audienceOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { aud: string }).aud;

function upgradeStatus(app: TestApp, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${app.baseUrl.replace('http', 'ws')}/voyage/notification/v1/ws/products`, { headers: { Authorization: `Bearer ${token}` } });
    socket.on('open', () => {
      socket.close();
      resolve(101);
    });
    socket.on('unexpected-response', (_request, response) => resolve(response.statusCode!));
    socket.on('error', reject);
  });
}

describe('resources and audiences of access tokens (RFC 8707, RFC 9068 §4)', () => {
  let app: TestApp;
  let subscriber: TestClient;
  let publisher: TestClient;
  beforeAll(async () => {
    const port = await freePort();
    app = await startTestApp({ PORT: String(port), ALLOWED_RESOURCES: `http://127.0.0.1:${port}/, ${OTHER_API}` });
    subscriber = await createClient(app, { grants: ['client_credentials'] });
    publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
  });
  afterAll(() => app.close());

  it('issues tokens for this service by default and for a listed resource, however its trailing slash or host case is spelled', async () => {
    expect(await upgradeStatus(app, await clientToken(app, subscriber))).toBe(101);
    const listed = await tokenFor(app, subscriber, 'notification:subscribe', app.baseUrl.replace('127.0.0.1', '127.0.0.1'.toUpperCase()));
    expect(listed.resource).toBe(app.baseUrl);
    expect(audienceOf(listed.token)).toBe(app.baseUrl);
    expect(await upgradeStatus(app, listed.token)).toBe(101);
  });

  it('refuses with invalid_target a resource that is not listed, even one on this service, and one that is no absolute URI', async () => {
    for (const resource of [`${app.baseUrl}/voyage/notification`, 'https://attacker.example/', 'urn:x', 'not a uri', `${app.baseUrl}/#fragment`]) {
      const response = await askFor(app, subscriber, 'notification:subscribe', resource);
      expect(response.status, resource).toBe(400);
      expect(((await response.json()) as { error: string }).error, resource).toBe('invalid_target');
    }
  });

  it('refuses a token issued for another listed resource, at the stream and at publish', async () => {
    const forOther = await tokenFor(app, subscriber, 'notification:subscribe', `${OTHER_API}/`);
    expect(audienceOf(forOther.token)).toBe(OTHER_API);
    expect(await upgradeStatus(app, forOther.token)).toBe(401);
    const foreign = await tokenFor(app, publisher, PUBLISH_SCOPE, OTHER_API);
    const response = await publish(app, foreign.token, validNotification(subscriber.id));
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      'Bearer realm="voyage-connect", error="invalid_token", error_description="the access token is for another audience"',
    );
  });
});

describe('resources with the default setting', () => {
  let app: TestApp;
  let subscriber: TestClient;
  beforeAll(async () => {
    app = await startTestApp();
    subscriber = await createClient(app, { grants: ['client_credentials'] });
  });
  afterAll(() => app.close());

  it("accepts only this service's own API URL as a resource", async () => {
    expect((await askFor(app, subscriber, 'notification:subscribe', `${app.baseUrl}/`)).status).toBe(200);
    const other = await askFor(app, subscriber, 'notification:subscribe', OTHER_API);
    expect(other.status).toBe(400);
    expect(await other.json()).toMatchObject({ error: 'invalid_target' });
  });
});
