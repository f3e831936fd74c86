import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../factories/oauth.factory.js';
import { clientToken } from '../../factories/notification.factory.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// Any registration body, valid or not: the answer is below 500; a 4xx stores nothing (no client,
// no audit event); a 201 stores exactly the one client it answers, as its metadata says.

const METADATA_FIELDS = [
  'client_name',
  'grant_types',
  'response_types',
  'redirect_uris',
  'voyage_redirect_patterns',
  'post_logout_redirect_uris',
  'scope',
  'token_endpoint_auth_method',
  'id_token_signed_response_alg',
  'client_id',
  'client_secret',
  'jwks',
] as const;

const text = fc.oneof(
  fc.string(),
  fc.constantFrom('', ' ', 'x'.repeat(300), '\u0000', 'é', '<script>', 'Ship tablet', 'a\nb'),
  fc.constantFrom(
    'https://app.example.com/cb',
    'http://127.0.0.1:8080/cb',
    'http://192.168.0.0/16:*/callback',
    'http://8.8.0.0/16:*/cb',
    'https://app.example.com/cb#frag',
    'javascript:alert(1)',
    'https://user@app.example.com/cb',
  ),
  fc.constantFrom('authorization_code', 'refresh_token', 'client_credentials', 'device_code', 'urn:ietf:params:oauth:grant-type:device_code', 'implicit', 'password'),
  fc.constantFrom('notification:subscribe', 'notification:publish', 'openid profile', 'clients:register', 'a  b', 'admin:write'),
  fc.constantFrom('client_secret_basic', 'client_secret_post', 'none', 'private_key_jwt', 'RS256', 'ES256', 'HS256', 'code', 'token'),
);
const value: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: text },
  { weight: 3, arbitrary: fc.array(text, { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, 0, -1, 1e308, [], {}) },
);
let names = 0;
const uniqueName = () => `Property client ${process.pid}-${++names}`;
/** Values a registration accepts, field by field. */
const valid: Record<string, fc.Arbitrary<unknown>> = {
  grant_types: fc.subarray(['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'], { minLength: 1 }),
  redirect_uris: fc.subarray(['https://app.example.com/cb', 'http://127.0.0.1:8080/cb']),
  voyage_redirect_patterns: fc.subarray(['http://192.168.0.0/16:*/callback', 'http://10.0.0.0/8:8080/cb']),
  post_logout_redirect_uris: fc.subarray(['https://app.example.com/bye']),
  scope: fc.constantFrom('notification:subscribe', 'openid profile', 'openid notification:subscribe'),
  token_endpoint_auth_method: fc.constantFrom('client_secret_basic', 'client_secret_post'),
  id_token_signed_response_alg: fc.constantFrom('RS256', 'ES256'),
};
const mostlyValid = fc
  .tuple(fc.record(valid, { requiredKeys: [] }), fc.option(fc.tuple(fc.constantFrom(...METADATA_FIELDS), value), { freq: 2 }))
  .map(([fields, mutation]) => ({ ...fields, client_name: uniqueName(), ...(mutation ? { [mutation[0]]: mutation[1] } : {}) }));
const body = fc.oneof(
  { weight: 4, arbitrary: fc.record(Object.fromEntries(METADATA_FIELDS.map((field) => [field, value])), { requiredKeys: [] }) },
  { weight: 5, arbitrary: mostlyValid },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
);

describe('registration bodies, generated', () => {
  let app: TestApp;
  let token: string;

  beforeAll(async () => {
    app = await startTestApp({ REGISTRATION_RATE_LIMIT: '100000' });
    const registrar = await createClient(app, { grants: ['client_credentials'], scopes: ['clients:register'] });
    token = await clientToken(app, registrar, 'clients:register');
  });
  afterAll(async () => {
    await app?.close();
  });

  const counts = async () => {
    const [row] = await query<{ clients: string; events: string }>(app.databaseUrl, 'SELECT (SELECT count(*) FROM clients) AS clients, (SELECT count(*) FROM audit_events) AS events');
    return { clients: Number(row.clients), events: Number(row.events) };
  };

  it('answers every body below 500; a 4xx stores nothing; a 201 stores exactly the client it describes', async () => {
    let created = 0;
    await fc.assert(
      fc.asyncProperty(body, async (generated) => {
        const before = await counts();
        const response = await fetch(`${app.baseUrl}/sso/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(generated),
        });
        const answer = (await response.json()) as Record<string, unknown>;
        const after = await counts();
        expect(response.status).toBeLessThan(500);
        if (response.status === 201) {
          created++;
          expect(after).toEqual({ clients: before.clients + 1, events: before.events + 1 });
          const [row] = await query<{ name: string; registered_by: string }>(app.databaseUrl, 'SELECT name, registered_by FROM clients WHERE id = $1', [answer.client_id]);
          expect(row.name).toBe(answer.client_name);
        } else {
          expect(response.status).toBeGreaterThanOrEqual(400);
          expect(answer).toMatchObject({ error: expect.stringMatching(/^(invalid_client_metadata|invalid_redirect_uri)$/), error_description: expect.any(String) });
          expect(after).toEqual(before);
        }
      }),
      { numRuns: 80 },
    );
    // The generator reaches both sides of the property.
    expect(created).toBeGreaterThan(5);
  }, 120_000);
});
