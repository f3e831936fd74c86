import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import {
  claimsFor,
  flipSignatureByte,
  hmacState,
  issueState,
  servicePublicKey,
  signWithServiceKey,
  stateClaims,
  stateHeader,
  unsignedState,
} from '../../factories/state.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { query } from '../../setup/database.js';
import { reconnectListeners, startSecondInstance } from '../../setup/instances.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const errorBody = (error: string) => ({ error, error_description: expect.any(String) });

/** GET /external/oauth2helper/code/get/{client_id}, with `?state=` only when a state is given. */
const poll = (app: TestApp, clientId: string, state?: string) =>
  fetch(`${app.baseUrl}/external/oauth2helper/code/get/${encodeURIComponent(clientId)}${state === undefined ? '' : `?state=${encodeURIComponent(state)}`}`);

/** A state whose sign-in the user completed without a redirect_url: its code waits at the poll endpoint. */
async function approvedState(app: TestApp, clientId: string) {
  const issued = await issueState(app, clientId);
  const login = await signIn(issued.authorize_url, await createUser(app));
  expect(login.status).toBe(200);
  return issued;
}

describe('GET /external/oauth2helper/code/get/{client_id}', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    client = await createClient(app);
  });
  afterAll(() => app.close());

  describe('hand-over of the code', () => {
    it('answers 404 before sign-in, 200 {code} once after it, and 404 afterwards, never cached', async () => {
      const { code_url, authorize_url, state } = await issueState(app, client.id);
      expect(code_url).toBe(`${app.baseUrl}/external/oauth2helper/code/get/${client.id}?state=${state}`);

      const before = await fetch(code_url);
      expect(before.status).toBe(404);
      expect(before.headers.get('cache-control')).toBe('no-store');
      expect(await before.json()).toEqual(errorBody('not_found'));

      expect((await signIn(authorize_url, await createUser(app))).status).toBe(200);

      const ready = await fetch(code_url);
      expect(ready.status).toBe(200);
      expect(ready.headers.get('cache-control')).toBe('no-store');
      expect(await ready.json()).toEqual({ code: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });

      for (let i = 0; i < 2; i++) {
        const after = await fetch(code_url);
        expect(after.status).toBe(404);
        expect(await after.json()).toEqual(errorBody('not_found'));
      }
    });

    it('gives the code to exactly one of several simultaneous polls', async () => {
      const { code_url } = await approvedState(app, client.id);
      const responses = await Promise.all(Array.from({ length: 8 }, () => fetch(code_url)));
      const statuses = responses.map((response) => response.status).sort();
      expect(statuses).toEqual([200, 404, 404, 404, 404, 404, 404, 404]);
      const bodies = await Promise.all(responses.map((response) => response.json() as Promise<Record<string, unknown>>));
      expect(bodies.filter((body) => 'code' in body)).toHaveLength(1);
    });

    it('hands out a code the token endpoint exchanges for tokens', async () => {
      const { code_url } = await approvedState(app, client.id);
      const { code } = (await (await fetch(code_url)).json()) as { code: string };
      const response = await fetch(`${app.baseUrl}/sso/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: client.id, client_secret: client.secret }),
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ token_type: 'bearer', expires_in: 3600, scope: null });
    });

    it('answers 404 for a state whose client was disabled after the sign-in, and does not hand out its code', async () => {
      const owner = await createClient(app);
      const { code_url } = await approvedState(app, owner.id);
      await app.get(ClientsService).setEnabled(owner.id, false);
      for (let i = 0; i < 2; i++) {
        const response = await fetch(code_url);
        expect(response.status).toBe(404);
        expect(await response.json()).not.toHaveProperty('code');
      }
    });

    it('answers 404 for an unknown client id, with or without a valid state', async () => {
      const { state } = await approvedState(app, client.id);
      for (const response of [await poll(app, 'no-such-client', state), await poll(app, 'no-such-client')]) {
        expect(response.status).toBe(404);
        expect(response.headers.get('cache-control')).toBe('no-store');
        expect(await response.json()).not.toHaveProperty('code');
      }
      // The unknown-client polls did not consume the code.
      expect((await poll(app, client.id, state)).status).toBe(200);
    });
  });

  describe('states that are refused with 400 invalid_request', () => {
    // Every forged state below names the jti of a state whose code is ready: a service that
    // accepted one would answer 200 with that code. After each refusal the real state still works.
    let ready: { state: string; jti: string; exp: number };

    beforeAll(async () => {
      const { state } = await approvedState(app, client.id);
      const claims = stateClaims(state);
      ready = { state, jti: claims.jti, exp: claims.exp };
    });

    const expectRefused = async (response: Response) => {
      expect(response.status).toBe(400);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await response.json()).toEqual(errorBody('invalid_request'));
    };

    it('accepts a state re-signed with the service key and the same claims (so the forgeries below differ only in what they test)', async () => {
      const { state } = await approvedState(app, client.id);
      const resigned = await signWithServiceKey(app, stateClaims(state));
      expect(resigned).not.toBe(state);
      const response = await poll(app, client.id, resigned);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ code: expect.any(String) });
    });

    it('refuses a poll without state', async () => {
      await expectRefused(await poll(app, client.id));
      await expectRefused(await poll(app, client.id, ''));
    });

    it('refuses a state that is not a JWT', async () => {
      await expectRefused(await poll(app, client.id, 'garbage'));
      await expectRefused(await poll(app, client.id, 'a.b.c'));
    });

    it('refuses a state with one byte of its signature changed', async () => {
      await expectRefused(await poll(app, client.id, flipSignatureByte(ready.state)));
    });

    it('refuses an expired state signed with the service key', async () => {
      const now = Math.floor(Date.now() / 1000);
      const expired = await signWithServiceKey(app, { ...stateClaims(ready.state), iat: now - 1200, exp: now - 600 });
      await expectRefused(await poll(app, client.id, expired));
    });

    it('refuses a state issued to another client', async () => {
      const other = await createClient(app);
      const { state: othersState } = await approvedState(app, other.id);
      await expectRefused(await poll(app, client.id, othersState));
      // Re-bound to this client by editing the claim: the signature no longer matches.
      const [header, , signature] = othersState.split('.');
      const payload = Buffer.from(JSON.stringify({ ...stateClaims(othersState), client_id: client.id })).toString('base64url');
      await expectRefused(await poll(app, client.id, `${header}.${payload}.${signature}`));
      // The state still belongs to its own client.
      expect((await poll(app, other.id, othersState)).status).toBe(200);
    });

    it('refuses an unsigned state (alg none)', async () => {
      const claims = claimsFor(app, client.id, { jti: ready.jti, exp: ready.exp });
      await expectRefused(await poll(app, client.id, unsignedState(stateHeader(ready.state), claims)));
    });

    it('refuses an HS256 state keyed with the public key (algorithm confusion)', async () => {
      const { kid, pem } = await servicePublicKey(app);
      const claims = claimsFor(app, client.id, { jti: ready.jti, exp: ready.exp });
      await expectRefused(await poll(app, client.id, hmacState(pem, { typ: 'vc-state+jwt', kid }, claims)));
      await expectRefused(await poll(app, client.id, hmacState(Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64'), { typ: 'vc-state+jwt', kid }, claims)));
    });

    it('refuses a state typed as an access token (at+jwt)', async () => {
      const atJwt = await signWithServiceKey(app, claimsFor(app, client.id, { jti: ready.jti, exp: ready.exp }), { typ: 'at+jwt' });
      await expectRefused(await poll(app, client.id, atJwt));
    });

    it('still hands out the code of the real state after all the refusals', async () => {
      const response = await poll(app, client.id, ready.state);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ code: expect.any(String) });
    });
  });
});

describe('GET /external/oauth2helper/code/get/{client_id} with CODE_POLL_MIN_INTERVAL=5', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '5' });
    client = await createClient(app);
  });
  afterAll(() => app.close());

  it('answers the first poll normally and a second one right after with 429 slow_down and Retry-After', async () => {
    const { code_url } = await issueState(app, client.id);
    expect((await fetch(code_url)).status).toBe(404);

    const response = await fetch(code_url);
    expect(response.status).toBe(429);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const retryAfter = response.headers.get('retry-after');
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(5);
    expect(await response.json()).toEqual(errorBody('slow_down'));
  });

  it('answers the next poll normally once the Retry-After time has passed', async () => {
    const { code_url } = await issueState(app, client.id);
    expect((await fetch(code_url)).status).toBe(404);
    const limited = await fetch(code_url);
    expect(limited.status).toBe(429);
    await new Promise((resolve) => setTimeout(resolve, Number(limited.headers.get('retry-after')) * 1000 + 100));
    expect((await fetch(code_url)).status).toBe(404);
  });

  it('limits each state on its own: the first poll of another state gets its ready code', async () => {
    const first = await issueState(app, client.id);
    expect((await fetch(first.code_url)).status).toBe(404);
    const { code_url } = await approvedState(app, client.id);
    const response = await fetch(code_url);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ code: expect.any(String) });
  });
});

describe('GET /external/oauth2helper/code/get/{client_id} across instances', () => {
  let first: TestApp;
  let second: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    first = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    second = await startSecondInstance(first, { CODE_POLL_MIN_INTERVAL: '0' });
    client = await createClient(first);
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('hands a code approved through one instance to a device polling the other, exactly once', async () => {
    const { state, authorize_url } = await issueState(first, client.id);
    expect((await poll(second, client.id, state)).status).toBe(404);
    expect((await signIn(authorize_url, await createUser(first))).status).toBe(200);

    await expect.poll(async () => (await poll(second, client.id, state)).status, { timeout: 3000, interval: 50 }).toBe(200);
    expect((await poll(first, client.id, state)).status).toBe(404);
  });

  it('hands out a code whose announcement was lost, once the instance listens again', async () => {
    const { state } = await issueState(first, client.id);
    const { username } = await createUser(first);
    const [user] = await query<{ id: string }>(first.databaseUrl, 'SELECT id FROM portal_users WHERE username = $1', [username]);
    // Approved without the NOTIFY, as if it had been sent while the listeners were disconnected.
    await query(
      first.databaseUrl,
      `INSERT INTO authorizations (state_id, client_id, user_id, expires_at) VALUES ($1, $2, $3, to_timestamp($4))`,
      [stateClaims(state).jti, client.id, user.id, stateClaims(state).exp],
    );
    await reconnectListeners(second);

    const response = await poll(second, client.id, state);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ code: expect.any(String) });
  });
});
