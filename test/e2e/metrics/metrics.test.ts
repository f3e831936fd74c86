import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../factories/oauth.factory.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const metricValue = (text: string, line: string) => {
  const found = text.split('\n').find((row) => row.startsWith(line));
  return found === undefined ? undefined : Number(found.slice(line.length).trim());
};

describe('GET /metrics', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('serves Prometheus text with tokens by grant, stream gauges and HTTP latency by route', async () => {
    const client = await createClient(app, { grants: ['client_credentials'] });
    for (let i = 0; i < 2; i++) {
      const token = await fetch(`${app.baseUrl}/public/api/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }),
      });
      expect(token.status).toBe(200);
    }
    const response = await fetch(`${app.baseUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(metricValue(text, 'oauth_tokens_issued_total{grant="client_credentials"}')).toBe(2);
    expect(metricValue(text, 'ws_connections_open')).toBe(0);
    expect(metricValue(text, 'notification_oldest_unconfirmed_seconds')).toBe(0);
    expect(text).toContain('http_request_duration_seconds_count{method="POST",route="/public/api/oauth2/token",status="200"} 2');
    expect(text).toContain('# TYPE notification_publish_to_push_seconds histogram');
    expect(text).toContain('process_resident_memory_bytes');
  });
});

describe('notification metrics', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('count stored notifications (not repeats), pushes and their publish-to-push latency', async () => {
    const { clientToken, publish, validNotification, PUBLISH_SCOPE } = await import('../../factories/notification.factory.js');
    const { default: WebSocket } = await import('ws');
    const subscriber = await createClient(app, { grants: ['client_credentials'] });
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    const socket = new WebSocket(`${app.baseUrl.replace('http', 'ws')}/voyage/notification/v1/ws/products`, {
      headers: { Authorization: `Bearer ${await clientToken(app, subscriber)}` },
    });
    const received: unknown[] = [];
    socket.on('message', (data) => received.push(data));
    await new Promise((resolve) => socket.once('open', resolve));
    const body = validNotification(subscriber.id);
    const publisherToken = await clientToken(app, publisher, PUBLISH_SCOPE);
    await publish(app, publisherToken, body);
    await publish(app, publisherToken, body);
    await expect.poll(() => received.length).toBe(1);
    socket.close(1000);
    await new Promise((resolve) => socket.once('close', resolve));

    const text = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(metricValue(text, 'notifications_published_total')).toBe(1);
    expect(metricValue(text, 'notifications_delivered_total')).toBe(1);
    expect(metricValue(text, 'notification_publish_to_push_seconds_count')).toBe(1);
    expect(metricValue(text, 'ws_connections_total')).toBe(1);
    await expect.poll(async () => metricValue(await (await fetch(`${app.baseUrl}/metrics`)).text(), 'ws_closes_total{code="1000"}')).toBe(1);
  });
});
