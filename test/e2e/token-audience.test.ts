import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientToken, publish, PUBLISH_SCOPE, validNotification } from '../factories/notification.factory.js';
import { createClient, type TestClient } from '../factories/oauth.factory.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';

/** A client-credentials token asked for `resource` (RFC 8707), which becomes its `aud`. */
async function tokenFor(app: TestApp, client: TestClient, scope: string, resource: string): Promise<string> {
  const response = await fetch(`${app.baseUrl}/public/api/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret, scope, resource }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

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

describe('the audience of access tokens at the notification routes (RFC 9068 §4)', () => {
  let app: TestApp;
  let subscriber: TestClient;
  let publisher: TestClient;
  beforeAll(async () => {
    app = await startTestApp();
    subscriber = await createClient(app, { grants: ['client_credentials'] });
    publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
  });
  afterAll(() => app.close());

  it('accepts the default audience and resources on this service, over http or ws', async () => {
    expect(await upgradeStatus(app, await clientToken(app, subscriber))).toBe(101);
    expect(await upgradeStatus(app, await tokenFor(app, subscriber, 'notification:subscribe', `${app.baseUrl}/voyage/notification`))).toBe(101);
    const wsResource = `${app.baseUrl.replace('http', 'ws')}/voyage/notification/v1/ws/products`;
    expect(await upgradeStatus(app, await tokenFor(app, subscriber, 'notification:subscribe', wsResource))).toBe(101);
  });

  it('refuses a token issued for another resource, at the stream and at publish', async () => {
    expect(await upgradeStatus(app, await tokenFor(app, subscriber, 'notification:subscribe', 'https://other-api.example.com/'))).toBe(401);
    const foreign = await tokenFor(app, publisher, PUBLISH_SCOPE, 'https://other-api.example.com/');
    const response = await publish(app, foreign, validNotification(subscriber.id));
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      'Bearer realm="voyage-connect", error="invalid_token", error_description="the access token is for another audience"',
    );
  });
});
