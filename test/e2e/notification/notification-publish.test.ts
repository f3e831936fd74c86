import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { KeysService } from '../../../src/keys/keys.service.js';
import {
  clientToken,
  publish,
  PUBLISH_SCOPE,
  type PublishBody,
  pushedMessage,
  SUBSCRIBE_SCOPE,
  validNotification,
} from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { query } from '../../setup/database.js';
import { type CliResult, runCli } from '../../setup/processes.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const NOTIFICATIONS_PATH = '/voyage/notification/v1/notifications';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const REALM = 'Bearer realm="voyage-connect"';
const INVALID_TOKEN = /^Bearer realm="voyage-connect", error="invalid_token"(, error_description="[^"]*")?$/;
const DAY = 86_400_000;

interface StoredRow {
  seq: string;
  id: string;
  recipient: string;
  correlation_id: string;
  status: string;
  payload: string;
  published_by: string | null;
  created_at: Date;
  expires_at: Date;
}

type HttpResult = Awaited<ReturnType<typeof publish>>;

/** 400 in the service's validation format, naming `field` in every field error. */
function expectValidationError(response: HttpResult, field: string) {
  expect({ status: response.status, body: response.body }, response.text).toStrictEqual({
    status: 400,
    body: { message: 'Validation failed', errors: expect.any(Array), correlationId: response.headers.get('x-request-id') },
  });
  const errors = response.body.errors as unknown[];
  expect(errors.length).toBeGreaterThan(0);
  for (const error of errors) expect(error).toEqual(expect.stringContaining(field));
}

/** `{message, correlationId}` with the given status and challenge. */
function expectBearerRefusal(response: HttpResult, status: 401 | 403, challenge: string | RegExp) {
  expect({ status: response.status, body: response.body }, response.text).toStrictEqual({
    status,
    body: { message: expect.any(String), correlationId: response.headers.get('x-request-id') },
  });
  if (typeof challenge === 'string') expect(response.headers.get('www-authenticate')).toBe(challenge);
  else expect(response.headers.get('www-authenticate')).toMatch(challenge);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('notification publishing and history', () => {
  let app: TestApp;
  let publisher: TestClient;
  let publishToken: string;
  /** Recipients (client_credentials clients with the default subscribe scope). */
  let alice: TestClient;
  let bob: TestClient;
  let aliceToken: string;
  let bobToken: string;
  let cwd: string;

  const rows = (where = 'TRUE', params: unknown[] = []) =>
    query<StoredRow>(app.databaseUrl, `SELECT * FROM notifications WHERE ${where} ORDER BY seq`, params);
  const rowCount = async () => Number((await query<{ n: string }>(app.databaseUrl, 'SELECT count(*) AS n FROM notifications'))[0].n);
  const recipient = () => createClient(app, { grants: ['client_credentials'] });

  async function history(token: string | undefined, since?: string, params: [string, string][] = []) {
    const url = new URL(NOTIFICATIONS_PATH, app.baseUrl);
    if (since !== undefined) url.searchParams.set('since', since);
    for (const [name, value] of params) url.searchParams.append(name, value);
    const response = await fetch(url, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown>, text };
  }

  /** Publishes and expects 202 {id}; returns the id. */
  /** Publishes a new notification: 202 `{id}`. */
  async function published(body: unknown, token = publishToken): Promise<string> {
    const response = await publish(app, token, body);
    expect({ status: response.status, body: response.body }, response.text).toStrictEqual({ status: 202, body: { id: expect.stringMatching(UUID) } });
    return response.body.id as string;
  }

  /** Publishes a repeat of a stored notification: 202 `{id, duplicate: true}` with the stored id. */
  async function republished(body: unknown, token = publishToken): Promise<string> {
    const response = await publish(app, token, body);
    expect({ status: response.status, body: response.body }, response.text).toStrictEqual({ status: 202, body: { id: expect.stringMatching(UUID), duplicate: true } });
    return response.body.id as string;
  }

  /** A client-credentials token signed with the service's own key, with any header and claims. */
  async function forgeToken(options: { typ?: string; claims?: Record<string, unknown>; iat?: number; exp?: number; issuer?: string } = {}) {
    const key = await app.get(KeysService).signingKey();
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ client_id: publisher.id, scope: PUBLISH_SCOPE, jti: randomUUID(), ...options.claims })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: options.typ ?? 'at+jwt' })
      .setIssuer(options.issuer ?? app.baseUrl)
      .setSubject(publisher.id)
      .setAudience(app.baseUrl)
      .setIssuedAt(options.iat ?? now)
      .setExpirationTime(options.exp ?? now + 600)
      .sign(key.privateKey);
  }

  const cli = (args: string[]) => runCli(args, { cwd, env: { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn' } });
  async function writeJson(name: string, content: unknown): Promise<string> {
    const file = join(cwd, name);
    await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  }
  function expectCliFailure(result: CliResult, message?: RegExp) {
    expect(result, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toMatchObject({ code: 1, signal: null, stdout: '' });
    expect(result.stderr).toMatch(/^error: [^\n]+\n$/);
    if (message) expect(result.stderr).toMatch(message);
  }

  beforeAll(async () => {
    app = await startTestApp({ HOUSEKEEPING_INTERVAL: '86400' });
    cwd = await mkdtemp(join(tmpdir(), 'voyage-connect-notification-'));
    publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    publishToken = await clientToken(app, publisher, PUBLISH_SCOPE);
    alice = await recipient();
    bob = await recipient();
    aliceToken = await clientToken(app, alice);
    bobToken = await clientToken(app, bob);
  });
  afterAll(async () => {
    await app?.close();
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });

  describe('POST /voyage/notification/v1/notifications', () => {
    it('answers 202 {id} for a valid notification and stores it: payload exactly the notification fields in their documented order, without recipient', async () => {
      const body = validNotification(alice.id);
      const before = Date.now();
      const response = await publish(app, publishToken, body);
      expect({ status: response.status, body: response.body }).toStrictEqual({ status: 202, body: { id: expect.stringMatching(UUID) } });
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');

      const [row] = await rows('id = $1', [response.body.id]);
      expect(row).toMatchObject({ recipient: alice.id, correlation_id: body.correlationId, status: 'New', published_by: publisher.id });
      expect(row.payload).toBe(
        JSON.stringify({
          correlationId: body.correlationId,
          productName: 'RouteAdvice',
          origin: 'RouteConfigurationService',
          status: 'New',
          statusTimestamp: '2026-11-21T08:30:00.123Z',
          deliverables: [{ productType: 'pdf' }, { productType: 'rtz' }],
          customerReferenceId: 'CUST-REF-42',
          routeCalculationScheduleId: body.routeCalculationScheduleId,
          warnings: ['Image 3 of the PDF could not be generated'],
          creationDate: '2026-11-21T08:29:59.987Z',
        }),
      );
      // Retained for NOTIFICATION_RETENTION (7 days by default).
      expect(row.expires_at.getTime()).toBeGreaterThanOrEqual(before + 7 * DAY - 5_000);
      expect(row.expires_at.getTime()).toBeLessThanOrEqual(Date.now() + 7 * DAY + 5_000);
    });

    it('accepts timestamps with an offset and an empty warnings list, and stores them as sent', async () => {
      const body = validNotification(alice.id, { statusTimestamp: '2026-11-21T10:30:00.000+02:00', creationDate: '2026-11-21T08:30:00.000-00:30', warnings: [] });
      const id = await published(body);
      const [row] = await rows('id = $1', [id]);
      expect(JSON.parse(row.payload)).toStrictEqual(pushedMessage(body));
    });

    it('stores a repeated (recipient, correlationId, status) once and answers the first id again, saying it is a duplicate', async () => {
      const body = validNotification(alice.id);
      const first = await published(body);
      const second = await republished(body);
      expect(second).toBe(first);
      // Even when the repeat differs in other fields, the stored notification stays the first.
      const third = await republished({ ...body, productName: 'RouteComparison', warnings: ['changed'] });
      expect(third).toBe(first);
      const stored = await rows('correlation_id = $1', [body.correlationId]);
      expect(stored.map((row) => row.id)).toEqual([first]);
      expect(JSON.parse(stored[0].payload)).toStrictEqual(pushedMessage(body));
    });

    it('accepts upper-case UUIDs (RFC 4122 §3: case-insensitive on input), stores and lists them lower case, and answers every retry with the same id', async () => {
      const body = validNotification(alice.id);
      const upper = { ...body, correlationId: body.correlationId.toUpperCase(), routeCalculationScheduleId: body.routeCalculationScheduleId.toUpperCase() };
      const id = await published(upper);
      expect(await republished(upper)).toBe(id);
      // The lower-case spelling is the same notification.
      expect(await republished(body)).toBe(id);
      const stored = await rows('correlation_id = $1', [body.correlationId]);
      expect(stored.map((row) => row.id)).toEqual([id]);
      expect(stored[0].payload).toBe(JSON.stringify(pushedMessage(body)));
    });

    it('stores a second row for the same correlationId with a different status, or for a different recipient', async () => {
      const body = validNotification(alice.id);
      const fresh = await published(body);
      const updated = await published({ ...body, status: 'Updated' });
      const forBob = await published({ ...body, recipient: bob.id });
      expect(new Set([fresh, updated, forBob]).size).toBe(3);
      const stored = await rows('correlation_id = $1', [body.correlationId]);
      expect(stored.map((row) => [row.id, row.recipient, row.status])).toEqual([
        [fresh, alice.id, 'New'],
        [updated, alice.id, 'Updated'],
        [forBob, bob.id, 'New'],
      ]);
    });

    it('drops unknown fields, top-level and inside deliverables: they are neither stored nor pushed', async () => {
      const listener = await recipient();
      const body = validNotification(listener.id);
      const id = await published({
        ...body,
        downloadUrl: 'https://products.example.com/report.pdf',
        deliverables: [{ productType: 'pdf', url: 'https://products.example.com/x' }],
        internal: { secret: true },
      });
      const expected = { ...pushedMessage(body), deliverables: [{ productType: 'pdf' }] };
      const [row] = await rows('id = $1', [id]);
      expect(row.payload).toBe(JSON.stringify(expected));

      const since = new Date(Date.now() - 60_000).toISOString();
      const listed = await history(await clientToken(app, listener), since);
      expect({ status: listed.status, body: listed.body }).toStrictEqual({ status: 200, body: [{ ...expected, seq: expect.any(Number) }] });

      // The stream pushes exactly the notification's fields too.
      const socket = new WebSocket(`${app.baseUrl.replace('http', 'ws')}/voyage/notification/v1/ws/products`, {
        headers: { authorization: `Bearer ${await clientToken(app, listener)}` },
      });
      try {
        const message = await new Promise<string>((resolve, reject) => {
          socket.once('message', (data) => resolve(data.toString()));
          socket.once('error', reject);
          setTimeout(() => reject(new Error('no message pushed within 10 s')), 10_000);
        });
        expect(message).toBe(JSON.stringify(expected));
      } finally {
        socket.close();
      }
    });

    it('refuses an unknown recipient with 400 naming recipient and stores nothing', async () => {
      const count = await rowCount();
      const response = await publish(app, publishToken, validNotification('no-such-client'));
      expectValidationError(response, 'recipient');
      expect(await rowCount()).toBe(count);
    });

    describe('validation: 400 {message: "Validation failed", errors naming the field, correlationId}, nothing stored', () => {
      const FIELDS = [
        'recipient',
        'correlationId',
        'productName',
        'origin',
        'status',
        'statusTimestamp',
        'deliverables',
        'customerReferenceId',
        'routeCalculationScheduleId',
        'warnings',
        'creationDate',
      ] as const;

      async function expectRefused(change: (body: PublishBody) => Record<string, unknown>, field: string) {
        const count = await rowCount();
        const response = await publish(app, publishToken, change(validNotification(alice.id)));
        expectValidationError(response, field);
        expect(await rowCount()).toBe(count);
      }

      it.each(FIELDS)('refuses a body without %s', async (field) => {
        await expectRefused((body) => {
          const { [field]: _omitted, ...rest } = body;
          return rest;
        }, field);
      });

      it.each([
        ['recipient', 42],
        ['correlationId', 123],
        ['productName', 7],
        ['origin', true],
        ['status', { value: 'New' }],
        ['statusTimestamp', 1_763_713_800_000],
        ['deliverables', 'pdf'],
        ['deliverables', { productType: 'pdf' }],
        ['customerReferenceId', ['CUST']],
        ['routeCalculationScheduleId', 1],
        ['warnings', 'Image 3 could not be generated'],
        ['creationDate', null],
        ['productName', null],
      ] as const)('refuses %s of the wrong type (%j)', async (field, value) => {
        await expectRefused((body) => ({ ...body, [field]: value }), field);
      });

      it.each(['recipient', 'correlationId', 'productName', 'origin', 'status', 'statusTimestamp', 'customerReferenceId', 'routeCalculationScheduleId', 'creationDate'])(
        'refuses an empty string as %s',
        async (field) => {
          await expectRefused((body) => ({ ...body, [field]: '' }), field);
        },
      );

      it.each([
        ['correlationId', 'not-a-uuid'],
        ['correlationId', '8c34df4a68b4ba6b8c34df4a68b4ba6b'],
        ['correlationId', '8c34df4a-68b4-ba6b-8c34-df4a68b4ba6'],
        ['routeCalculationScheduleId', '12345'],
        ['routeCalculationScheduleId', '{8c34df4a-68b4-4a6b-8c34-df4a68b4ba6b}'],
      ])('refuses %s that is not a UUID (%s)', async (field, value) => {
        await expectRefused((body) => ({ ...body, [field]: value }), field);
      });

      it.each([
        ['statusTimestamp', '2026-11-21T08:30:00Z'],
        ['creationDate', '2026-11-21T08:30:00+01:00'],
        ['statusTimestamp', '2026-11-21T08:30:00.1Z'],
        ['creationDate', '2026-11-21T08:30:00.123456Z'],
        ['statusTimestamp', '2026-11-21 08:30:00.000Z'],
        ['creationDate', '2026-11-21T08:30:00.000'],
        ['statusTimestamp', '2026-11-21'],
        ['creationDate', '21/11/2026 08:30:00.000'],
        ['statusTimestamp', '2026-13-21T08:30:00.000Z'],
        ['creationDate', '2026-11-21T24:30:00.000Z'],
        ['statusTimestamp', '2026-02-30T08:30:00.000Z'],
        ['creationDate', 'Sat, 21 Nov 2026 08:30:00 GMT'],
      ])('refuses %s without milliseconds or not RFC 3339 (%s)', async (field, value) => {
        await expectRefused((body) => ({ ...body, [field]: value }), field);
      });

      it.each([
        ['an empty productType', [{ productType: '' }]],
        ['a missing productType', [{ productType: 'pdf' }, {}]],
        ['a non-string productType', [{ productType: 5 }]],
        ['a string instead of an object', ['pdf']],
      ])('refuses deliverables with %s, naming productType or deliverables', async (_case, deliverables) => {
        const count = await rowCount();
        const response = await publish(app, publishToken, { ...validNotification(alice.id), deliverables });
        expectValidationError(response, 'deliverables');
        expect(await rowCount()).toBe(count);
      });

      it('names the deliverable\'s productType when it is empty', async () => {
        const response = await publish(app, publishToken, { ...validNotification(alice.id), deliverables: [{ productType: 'pdf' }, { productType: '' }] });
        expectValidationError(response, 'deliverables.1.productType');
      });

      it.each([
        ['a number', ['ok', 3]],
        ['null', [null]],
        ['an object', [{ text: 'x' }]],
      ])('refuses warnings containing %s', async (_case, warnings) => {
        await expectRefused((body) => ({ ...body, warnings }), 'warnings');
      });

      it.each([
        ['recipient', (body: PublishBody) => ({ ...body, recipient: `${body.recipient}\ud800` })],
        ['productName', (body: PublishBody) => ({ ...body, productName: '\udc00RouteAdvice' })],
        ['origin', (body: PublishBody) => ({ ...body, origin: 'Route\ud83dService' })],
        ['status', (body: PublishBody) => ({ ...body, status: 'New\ud800' })],
        ['customerReferenceId', (body: PublishBody) => ({ ...body, customerReferenceId: '\ude00' })],
        ['deliverables.0.productType', (body: PublishBody) => ({ ...body, deliverables: [{ productType: 'pdf\udbff' }] })],
        ['warnings', (body: PublishBody) => ({ ...body, warnings: ['fine', 'half an emoji \ud83d'] })],
      ])('refuses a lone surrogate in %s with 400 saying so, storing nothing (PostgreSQL would store U+FFFD instead)', async (field, change) => {
        const count = await rowCount();
        const response = await publish(app, publishToken, change(validNotification(alice.id)));
        expectValidationError(response, field);
        expect(response.body.errors).toEqual([expect.stringContaining('lone surrogate')]);
        expect(await rowCount()).toBe(count);
      });

      it('names every invalid field of one body', async () => {
        const response = await publish(app, publishToken, { ...validNotification(alice.id), productName: '', correlationId: 'x' });
        expect(response.status).toBe(400);
        const errors = (response.body.errors as string[]).join('\n');
        expect(errors).toContain('productName');
        expect(errors).toContain('correlationId');
      });

      it('refuses a body that is not a JSON object with 400, storing nothing', async () => {
        const count = await rowCount();
        for (const body of [[validNotification(alice.id)], 'notification', 42, null]) {
          const response = await publish(app, publishToken, body);
          expect({ status: response.status, body: response.body }, `${JSON.stringify(body)}: ${response.text}`).toStrictEqual({
            status: 400,
            body: { message: expect.any(String), errors: expect.any(Array), correlationId: response.headers.get('x-request-id') },
          });
        }
        expect(await rowCount()).toBe(count);
      });

      it('refuses a request without a body, with a form body or with broken JSON with 400, storing nothing', async () => {
        const count = await rowCount();
        const post = async (init: RequestInit) => {
          const response = await fetch(`${app.baseUrl}${NOTIFICATIONS_PATH}`, { method: 'POST', ...init });
          return { status: response.status, body: (await response.json()) as Record<string, unknown>, requestId: response.headers.get('x-request-id') };
        };
        const authorization = `Bearer ${publishToken}`;
        const empty = await post({ headers: { authorization } });
        expect(empty).toStrictEqual({ status: 400, body: { message: 'Validation failed', errors: expect.arrayContaining(['recipient must be a string']), correlationId: empty.requestId }, requestId: empty.requestId });
        // A form can never carry deliverables objects: it is read, then refused field by field.
        const form = await post({ headers: { authorization }, body: new URLSearchParams({ recipient: alice.id }) });
        expect(form).toStrictEqual({ status: 400, body: { message: 'Validation failed', errors: expect.arrayContaining(['deliverables must be an array']), correlationId: form.requestId }, requestId: form.requestId });
        const broken = await post({ headers: { authorization, 'content-type': 'application/json' }, body: '{"recipient": ' });
        expect(broken).toStrictEqual({ status: 400, body: { message: expect.any(String), correlationId: broken.requestId }, requestId: broken.requestId });
        expect(await rowCount()).toBe(count);
      });

      it('answers each of a burst of concurrent publishes as if it had been alone', async () => {
        const forAlice = Array.from({ length: 30 }, () => validNotification(alice.id));
        const forBob = Array.from({ length: 30 }, () => validNotification(bob.id));
        const repeated = validNotification(bob.id);
        const count = await rowCount();
        // Sent in this order, all in flight together: they share transactions.
        const responses = await Promise.all(
          [...forAlice.flatMap((body, index) => [body, forBob[index]]), repeated, validNotification('no-such-client'), repeated].map((body) =>
            publish(app, publishToken, body),
          ),
        );
        const unknown = responses.at(-2)!;
        expectValidationError(unknown, 'recipient');
        const accepted = responses.filter((response) => response !== unknown);
        const [firstRepeat, secondRepeat] = accepted.slice(-2);
        for (const response of accepted.slice(0, -2)) expect({ status: response.status, body: response.body }).toStrictEqual({ status: 202, body: { id: expect.stringMatching(UUID) } });
        // Of the two identical publishes, whichever was stored first is new and the other a duplicate.
        expect([firstRepeat, secondRepeat].map((response) => response.body.duplicate ?? false).sort()).toEqual([false, true]);
        expect(secondRepeat.body.id).toBe(firstRepeat.body.id);
        expect(await rowCount()).toBe(count + 61);
        const stored = await rows('correlation_id = ANY($1)', [[...forAlice, ...forBob].map((body) => body.correlationId)]);
        expect(stored.filter((row) => row.recipient === alice.id)).toHaveLength(30);
        expect(stored.filter((row) => row.recipient === bob.id)).toHaveLength(30);
        expect(new Set(stored.map((row) => row.id))).toEqual(new Set(accepted.slice(0, 60).map((response) => response.body.id)));
      });

      it('stores concurrent identical publishes once and answers every one with the same id, all but one as a duplicate', async () => {
        const body = validNotification(alice.id);
        const responses = await Promise.all(Array.from({ length: 8 }, () => publish(app, publishToken, body)));
        expect(responses.map((response) => response.status)).toEqual(Array(8).fill(202));
        const ids = responses.map((response) => response.body.id);
        expect(new Set(ids).size).toBe(1);
        expect(responses.filter((response) => response.body.duplicate === true)).toHaveLength(7);
        expect((await rows('correlation_id = $1', [body.correlationId])).map((row) => row.id)).toEqual([ids[0]]);
      });
    });

    describe('bearer token', () => {
      it('refuses a request without a token with 401 and WWW-Authenticate: Bearer realm="voyage-connect", storing nothing', async () => {
        const count = await rowCount();
        expectBearerRefusal(await publish(app, undefined, validNotification(alice.id)), 401, REALM);
        expect(await rowCount()).toBe(count);
      });

      it('refuses a garbage token and a non-Bearer Authorization with 401 error="invalid_token"', async () => {
        expectBearerRefusal(await publish(app, 'garbage', validNotification(alice.id)), 401, INVALID_TOKEN);
        expectBearerRefusal(await publish(app, 'eyJhbGciOiJFUzI1NiJ9.e30.AAAA', validNotification(alice.id)), 401, INVALID_TOKEN);
        const response = await fetch(`${app.baseUrl}${NOTIFICATIONS_PATH}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${publisher.id}:${publisher.secret}`).toString('base64')}` },
          body: JSON.stringify(validNotification(alice.id)),
        });
        expect(response.status).toBe(401);
        expect(response.headers.get('www-authenticate')).toMatch(INVALID_TOKEN);
      });

      it('accepts a token signed with the service key (the forging used below is sound)', async () => {
        await published(validNotification(alice.id), await forgeToken());
      });

      it('refuses an unsigned alg=none token with 401 error="invalid_token"', async () => {
        const { kid } = await app.get(KeysService).signingKey();
        const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
        const now = Math.floor(Date.now() / 1000);
        const claims = { iss: app.baseUrl, sub: publisher.id, aud: app.baseUrl, client_id: publisher.id, scope: PUBLISH_SCOPE, iat: now, exp: now + 600, jti: randomUUID() };
        const unsigned = `${part({ alg: 'none', typ: 'at+jwt', kid })}.${part(claims)}.`;
        const count = await rowCount();
        expectBearerRefusal(await publish(app, unsigned, validNotification(alice.id)), 401, INVALID_TOKEN);
        // The same claims with the real signature's slot filled by a copy from another token.
        const real = await forgeToken();
        const spliced = `${part({ alg: 'none', typ: 'at+jwt', kid })}.${part(claims)}.${real.split('.')[2]}`;
        expectBearerRefusal(await publish(app, spliced, validNotification(alice.id)), 401, INVALID_TOKEN);
        expect(await rowCount()).toBe(count);
      });

      it('refuses an expired token with 401 error="invalid_token"', async () => {
        const now = Math.floor(Date.now() / 1000);
        const expired = await forgeToken({ iat: now - 3_600, exp: now - 60 });
        expectBearerRefusal(await publish(app, expired, validNotification(alice.id)), 401, INVALID_TOKEN);
      });

      it('refuses a token of another type (typ JWT, or none) with 401 error="invalid_token"', async () => {
        expectBearerRefusal(await publish(app, await forgeToken({ typ: 'JWT' }), validNotification(alice.id)), 401, INVALID_TOKEN);
        const key = await app.get(KeysService).signingKey();
        const untyped = await new SignJWT({ client_id: publisher.id, scope: PUBLISH_SCOPE, jti: randomUUID() })
          .setProtectedHeader({ alg: key.alg, kid: key.kid })
          .setIssuer(app.baseUrl)
          .setSubject(publisher.id)
          .setIssuedAt()
          .setExpirationTime('10m')
          .sign(key.privateKey);
        expectBearerRefusal(await publish(app, untyped, validNotification(alice.id)), 401, INVALID_TOKEN);
      });

      it('refuses a token from another issuer with 401 error="invalid_token"', async () => {
        expectBearerRefusal(await publish(app, await forgeToken({ issuer: 'https://evil.example.com' }), validNotification(alice.id)), 401, INVALID_TOKEN);
      });

      it('refuses a subscribe-only token with 403 error="insufficient_scope" naming notification:publish, storing nothing', async () => {
        const count = await rowCount();
        expectBearerRefusal(
          await publish(app, aliceToken, validNotification(alice.id)),
          403,
          `${REALM}, error="insufficient_scope", scope="${PUBLISH_SCOPE}"`,
        );
        expect(await rowCount()).toBe(count);
      });

      it('refuses the still-unexpired token of a client disabled since with 401 error="invalid_token"', async () => {
        const other = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
        const token = await clientToken(app, other, PUBLISH_SCOPE);
        await published(validNotification(alice.id), token);
        await app.get(ClientsService).setEnabled(other.id, false);
        expectBearerRefusal(await publish(app, token, validNotification(alice.id)), 401, INVALID_TOKEN);
      });

      it('checks the token before the body: a bad token with an invalid body is 401, not 400', async () => {
        expectBearerRefusal(await publish(app, undefined, { nonsense: true }), 401, REALM);
      });
    });
  });

  /** A notification as the history route lists it: the pushed fields, then its seq. */
  const listed = (body: PublishBody, seq: unknown = expect.any(Number)) => ({ ...pushedMessage(body), seq });

  describe('GET /voyage/notification/v1/notifications?since=', () => {
    let carol: TestClient;
    let carolToken: string;
    let first: PublishBody;
    let bobsOwn: PublishBody;
    let later: PublishBody[];
    let between: string;
    let start: string;

    beforeAll(async () => {
      carol = await recipient();
      carolToken = await clientToken(app, carol);
      await sleep(50);
      start = new Date().toISOString();
      first = validNotification(carol.id);
      await published(first);
      bobsOwn = validNotification(bob.id, { correlationId: first.correlationId });
      await published(bobsOwn);
      await sleep(50);
      between = new Date().toISOString();
      await sleep(50);
      later = [validNotification(carol.id, { status: 'New' }), validNotification(carol.id, { productName: 'RouteComparison' })];
      for (const body of later) await published(body);
      await published({ ...later[0], status: 'Updated' });
      later.push({ ...later[0], status: 'Updated' });
    });

    it('returns the caller\'s notifications since the time, oldest first, each exactly the pushed fields and its seq', async () => {
      const response = await history(carolToken, start);
      expect({ status: response.status, body: response.body }).toStrictEqual({ status: 200, body: [first, ...later].map((body) => listed(body)) });
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      // The documented order, not alphabetical, and the seq after the notification's fields.
      expect(Object.keys((response.body as unknown as object[])[0])).toEqual([...Object.keys(pushedMessage(first)), 'seq']);
      // Each seq is the stored one.
      const stored = await rows('recipient = $1', [carol.id]);
      expect((response.body as unknown as { seq: number }[]).map((entry) => entry.seq)).toEqual(stored.map((row) => Number(row.seq)));
    });

    it('leaves out what was published before `since`', async () => {
      const response = await history(carolToken, between);
      expect({ status: response.status, body: response.body }).toStrictEqual({ status: 200, body: later.map((body) => listed(body)) });
    });

    it('accepts `since` with an offset and without fractional seconds', async () => {
      // Carol has nothing before `start`, so an earlier whole second lists the same notifications.
      const wholeSecond = Math.floor(Date.parse(start) / 1000) * 1000;
      const plusTwo = new Date(wholeSecond + 2 * 3_600_000).toISOString().replace(/\.\d{3}Z$/, '+02:00');
      const response = await history(carolToken, plusTwo);
      expect({ status: response.status, body: response.body }, response.text).toStrictEqual({ status: 200, body: [first, ...later].map((body) => listed(body)) });
    });

    it('returns an empty list for a time after the last publish', async () => {
      const response = await history(carolToken, new Date(Date.now() + 60_000).toISOString());
      expect({ status: response.status, body: response.body }).toStrictEqual({ status: 200, body: [] });
    });

    it('never returns another client\'s notifications', async () => {
      // Bob's notification shares first's correlationId and was published in the same window.
      const response = await history(bobToken, start);
      expect({ status: response.status, body: response.body }).toStrictEqual({ status: 200, body: [listed(bobsOwn)] });
      const fresh = await recipient();
      const empty = await history(await clientToken(app, fresh), start);
      expect({ status: empty.status, body: empty.body }).toStrictEqual({ status: 200, body: [] });
    });

    it.each([
      ['missing', undefined],
      ['garbage', 'yesterday'],
      ['a date only', '2026-11-21'],
      ['without an offset', '2026-11-21T08:30:00'],
      ['an impossible time', '2026-11-21T25:30:00Z'],
      ['a day that does not exist', '2026-02-30T08:30:00Z'],
      ['a Unix time', '1763713800'],
    ])('refuses `since` %s with 400 naming since', async (_case, since) => {
      const response = await history(carolToken, since);
      expect({ status: response.status, body: response.body }, response.text).toStrictEqual({
        status: 400,
        body: { message: 'Validation failed', errors: [expect.stringContaining('since')], correlationId: response.headers.get('x-request-id') },
      });
    });

    it('refuses a publish-only token with 403 error="insufficient_scope" naming the subscribe scope', async () => {
      expectBearerRefusal(await history(publishToken, start), 403, `${REALM}, error="insufficient_scope", scope="${SUBSCRIBE_SCOPE}"`);
    });

    it('refuses a request without a token with 401 and a garbage token with 401 invalid_token', async () => {
      expectBearerRefusal(await history(undefined, start), 401, REALM);
      expectBearerRefusal(await history('garbage', start), 401, INVALID_TOKEN);
    });
  });

  describe('GET /voyage/notification/v1/notifications?after=', () => {
    let dave: TestClient;
    let daveToken: string;
    let bodies: PublishBody[];
    /** Dave's stored seqs, in publish order. */
    let seqs: number[];

    beforeAll(async () => {
      dave = await recipient();
      daveToken = await clientToken(app, dave);
      bodies = Array.from({ length: 4 }, () => validNotification(dave.id));
      for (const body of bodies) await published(body);
      // Another client's notification in between: seqs are global, so Dave's have gaps.
      await published(validNotification(bob.id));
      bodies.push(validNotification(dave.id));
      await published(bodies[4]);
      seqs = (await query<{ seq: string }>(app.databaseUrl, 'SELECT seq FROM notifications WHERE recipient = $1 ORDER BY seq', [dave.id])).map((row) => Number(row.seq));
    });

    const after = (token: string, seq: string, more: [string, string][] = []) => history(token, undefined, [['after', seq], ...more]);

    it("returns the caller's notifications after the seq, oldest first, each with its seq", async () => {
      const all = await after(daveToken, '0');
      expect({ status: all.status, body: all.body }, all.text).toStrictEqual({ status: 200, body: bodies.map((body, index) => listed(body, seqs[index])) });
      const rest = await after(daveToken, String(seqs[1]));
      expect({ status: rest.status, body: rest.body }).toStrictEqual({ status: 200, body: bodies.slice(2).map((body, index) => listed(body, seqs[index + 2])) });
      // A seq that is not Dave's (a gap) works as well: what is after it.
      const fromGap = await after(daveToken, String(seqs[4] - 1));
      expect(fromGap.body).toStrictEqual([listed(bodies[4], seqs[4])]);
      expect((await after(daveToken, String(seqs[4]))).body).toStrictEqual([]);
      expect((await after(daveToken, '9223372036854775807')).body).toStrictEqual([]);
    });

    it('pages through more than one answer holds without a gap or a repeat, each page after the last seq of the one before', async () => {
      const many = await recipient();
      const token = await clientToken(app, many);
      const published = Array.from({ length: 1_005 }, () => validNotification(many.id));
      for (const part of [published.slice(0, 1_000), published.slice(1_000)]) {
        const response = await fetch(`${app.baseUrl}${NOTIFICATIONS_PATH}/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${publishToken}` },
          body: JSON.stringify(part),
        });
        expect(response.status).toBe(202);
      }
      const pages: { correlationId: string; seq: number }[][] = [];
      let last = '0';
      for (;;) {
        const page = await after(token, last);
        expect(page.status).toBe(200);
        const entries = page.body as unknown as { correlationId: string; seq: number }[];
        if (entries.length === 0) break;
        pages.push(entries);
        last = String(entries.at(-1)!.seq);
      }
      expect(pages.map((page) => page.length)).toEqual([1_000, 5]);
      expect(pages.flat().map((entry) => entry.correlationId)).toEqual(published.map((body) => body.correlationId));
    });

    it('applies both when given `since` and `after`', async () => {
      const both = await history(daveToken, new Date(Date.now() + 60_000).toISOString(), [['after', '0']]);
      expect({ status: both.status, body: both.body }).toStrictEqual({ status: 200, body: [] });
      const since = await history(daveToken, '2020-01-01T00:00:00Z', [['after', String(seqs[3])]]);
      expect(since.body).toStrictEqual([listed(bodies[4], seqs[4])]);
    });

    it.each([
      ['negative', '-1'],
      ['a fraction', '1.5'],
      ['a word', 'latest'],
      ['empty', ''],
      ['past the largest seq', '9223372036854775808'],
      ['in exponent form', '1e3'],
      ['hexadecimal', '0x10'],
      ['signed', '+1'],
      ['with a space', ' 1'],
    ])('refuses `after` %s with 400 naming after', async (_case, value) => {
      const response = await after(daveToken, value);
      expect({ status: response.status, body: response.body }, response.text).toStrictEqual({
        status: 400,
        body: { message: 'Validation failed', errors: [expect.stringContaining('after')], correlationId: response.headers.get('x-request-id') },
      });
    });

    it('refuses a repeated `after`, and a bad `since` beside a good `after`, with 400', async () => {
      const repeated = await after(daveToken, '1', [['after', '2']]);
      expect({ status: repeated.status, body: repeated.body }).toStrictEqual({
        status: 400,
        body: { message: 'Validation failed', errors: [expect.stringContaining('after')], correlationId: repeated.headers.get('x-request-id') },
      });
      const badSince = await history(daveToken, 'yesterday', [['after', '1']]);
      expect({ status: badSince.status, body: badSince.body }).toStrictEqual({
        status: 400,
        body: { message: 'Validation failed', errors: [expect.stringContaining('since')], correlationId: badSince.headers.get('x-request-id') },
      });
    });

    it("never returns another client's notifications", async () => {
      const response = await after(bobToken, String(seqs[0] - 1));
      expect((response.body as unknown as { correlationId: string }[]).map((entry) => entry.correlationId)).not.toContain(bodies[0].correlationId);
    });
  });

  describe('CLI notification:publish --file', () => {
    it('publishes a notification from a JSON file: exit 0, stdout {id}, stored like the HTTP route (no publisher)', async () => {
      const body = validNotification(alice.id);
      const result = await cli(['notification:publish', '--file', await writeJson('valid.json', body)]);
      expect(result, result.stderr).toMatchObject({ code: 0, signal: null });
      const output = JSON.parse(result.stdout) as { id: string };
      expect(output).toStrictEqual({ id: expect.stringMatching(UUID) });
      const [row] = await rows('id = $1', [output.id]);
      expect(row).toMatchObject({ recipient: alice.id, correlation_id: body.correlationId, status: 'New', published_by: null });
      expect(row.payload).toBe(JSON.stringify(pushedMessage(body)));
    });

    it('drops unknown fields from the file like the HTTP route', async () => {
      const body = validNotification(alice.id);
      const result = await cli(['notification:publish', '--file', await writeJson('extra.json', { ...body, downloadUrl: 'https://x.example.com/' })]);
      expect(result, result.stderr).toMatchObject({ code: 0 });
      const [row] = await rows('id = $1', [JSON.parse(result.stdout).id]);
      expect(row.payload).toBe(JSON.stringify(pushedMessage(body)));
    });

    it('stores a notification published by CLI and then by HTTP once, with one id', async () => {
      const body = validNotification(alice.id);
      const result = await cli(['notification:publish', '--file', await writeJson('twice.json', body)]);
      expect(result, result.stderr).toMatchObject({ code: 0 });
      const cliId = JSON.parse(result.stdout).id as string;
      expect(await republished(body)).toBe(cliId);
      expect((await rows('correlation_id = $1', [body.correlationId])).map((row) => row.id)).toEqual([cliId]);
    });

    it('stores a notification published by HTTP and then by CLI once, with one id', async () => {
      const body = validNotification(alice.id);
      const httpId = await published(body);
      const result = await cli(['notification:publish', '--file', await writeJson('twice-reverse.json', body)]);
      expect(result, result.stderr).toMatchObject({ code: 0 });
      expect(JSON.parse(result.stdout)).toStrictEqual({ id: httpId, duplicate: true });
      expect((await rows('correlation_id = $1', [body.correlationId])).map((row) => row.id)).toEqual([httpId]);
    });

    it('fails with exit 1 and "error:" for a file that is not JSON, storing nothing', async () => {
      const count = await rowCount();
      expectCliFailure(await cli(['notification:publish', '--file', await writeJson('bad.json', '{"recipient": ')]));
      expect(await rowCount()).toBe(count);
    });

    it('fails with exit 1 and "error:" for a missing file', async () => {
      expectCliFailure(await cli(['notification:publish', '--file', join(cwd, 'does-not-exist.json')]));
    });

    it('fails with exit 1 naming the field for a notification without statusTimestamp, storing nothing', async () => {
      const count = await rowCount();
      const { statusTimestamp: _omitted, ...body } = validNotification(alice.id);
      expectCliFailure(await cli(['notification:publish', '--file', await writeJson('missing.json', body)]), /statusTimestamp/);
      expect(await rowCount()).toBe(count);
    });

    it('fails with exit 1 for a JSON string, number or null instead of an object, storing nothing', async () => {
      const count = await rowCount();
      for (const [name, content] of [['string.json', '"hello"'], ['number.json', '42'], ['null.json', 'null']]) {
        expectCliFailure(await cli(['notification:publish', '--file', await writeJson(name, content)]), /recipient must be a string/);
      }
      expect(await rowCount()).toBe(count);
    });

    it('publishes a JSON array like the batch route: exit 0, stdout {results} in order, a repeat marked duplicate', async () => {
      const first = validNotification(alice.id);
      const second = validNotification(bob.id);
      const result = await cli(['notification:publish', '--file', await writeJson('batch.json', [first, second, first])]);
      expect(result, result.stderr).toMatchObject({ code: 0, signal: null, stderr: '' });
      const { results } = JSON.parse(result.stdout) as { results: { id: string }[] };
      expect(results).toStrictEqual([{ id: expect.stringMatching(UUID) }, { id: expect.stringMatching(UUID) }, { id: results[0].id, duplicate: true }]);
      expect((await rows('id = ANY($1)', [results.map((entry) => entry.id)])).map((row) => [row.id, row.correlation_id, row.published_by])).toEqual([
        [results[0].id, first.correlationId, null],
        [results[1].id, second.correlationId, null],
      ]);
    });

    it('publishes the valid elements of an array with a bad one, prints every result and exits 1', async () => {
      const good = [validNotification(alice.id), validNotification(alice.id)];
      const result = await cli(['notification:publish', '--file', await writeJson('mixed.json', [good[0], { ...validNotification(alice.id), statusTimestamp: 'yesterday' }, good[1]])]);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(/^error: 1 of 3 notifications were refused[^\n]*\n$/);
      const { results } = JSON.parse(result.stdout) as { results: Record<string, unknown>[] };
      expect(results).toStrictEqual([
        { id: expect.stringMatching(UUID) },
        { status: 400, errors: [expect.stringContaining('statusTimestamp')] },
        { id: expect.stringMatching(UUID) },
      ]);
      expect((await rows('recipient = $1 AND correlation_id = ANY($2)', [alice.id, good.map((body) => body.correlationId)])).length).toBe(2);
    });

    it('says exactly which elements were published and which were repeats of notifications published before', async () => {
      const earlier = validNotification(alice.id);
      await cli(['notification:publish', '--file', await writeJson('earlier.json', earlier)]);
      const fresh = validNotification(bob.id);
      const result = await cli(['notification:publish', '--file', await writeJson('repeats.json', [earlier, { ...fresh, statusTimestamp: 'yesterday' }, fresh, earlier])]);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toBe(
        'error: 1 of 4 notifications were refused: element 2 (see their errors above); published: element 3; repeats of notifications published before, not published again: elements 1, 4\n',
      );
      const { results } = JSON.parse(result.stdout) as { results: Record<string, unknown>[] };
      expect(results.map((entry) => ('errors' in entry ? 'refused' : entry.duplicate ? 'repeat' : 'published'))).toEqual(['repeat', 'refused', 'published', 'repeat']);
    });

    it('fails with exit 1 for an empty array, storing nothing', async () => {
      const count = await rowCount();
      expectCliFailure(await cli(['notification:publish', '--file', await writeJson('empty.json', [])]), /1 to 1000 notifications/);
      expect(await rowCount()).toBe(count);
    });

    it('fails with exit 1 naming recipient for an unknown recipient, storing nothing', async () => {
      const count = await rowCount();
      expectCliFailure(await cli(['notification:publish', '--file', await writeJson('unknown.json', validNotification('no-such-client'))]), /recipient/);
      expect(await rowCount()).toBe(count);
    });

    it('fails with exit 1 without --file', async () => {
      const result = await cli(['notification:publish']);
      expect(result).toMatchObject({ code: 1, stdout: '' });
    });
  });
});
