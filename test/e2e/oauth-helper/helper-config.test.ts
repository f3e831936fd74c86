import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { type HelperConfigResponse, issueState, requestConfig, STATE_TYP, stateClaims, stateHeader } from '../../factories/state.factory.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

// Public addresses distinct from the address the test talks to, so the test sees which one each URL uses.
const FRONTEND_URL = 'https://portal.example.test';
const API_URL = 'https://api.example.test';

const EXACT = 'https://device.example.test/callback';
const LOOPBACK_ANY_PORT = 'http://127.0.0.0/8:*/cb';
const LAN_PORT_8080 = 'http://192.168.0.0/16:8080/cb';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'; // RFC 7636 appendix B

const errorBody = (error: string) => ({ error, error_description: expect.any(String) });

describe('POST /external/oauth2helper/config/{client_id}', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ FRONTEND_URL, API_URL: `${API_URL}/` });
    client = await createClient(app, { redirectPatterns: [EXACT, LOOPBACK_ANY_PORT, LAN_PORT_8080] });
  });
  afterAll(() => app.close());

  describe('for an enabled client with the authorization_code grant', () => {
    it('answers 200 with authorize_url, code_url and accesstoken_request_url on the public URLs, the poll interval and the link lifetime, never cached', async () => {
      const response = await requestConfig(app, client.id);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.headers.get('cache-control')).toBe('no-store');
      const body = (await response.json()) as HelperConfigResponse;
      expect(Object.keys(body).sort()).toEqual(['accesstoken_request_url', 'authorize_url', 'code_url', 'expires_in', 'interval']);
      // Additions older helper clients ignore: the enforced minimum poll interval and the state's lifetime.
      expect(body).toMatchObject({ interval: app.env.CODE_POLL_MIN_INTERVAL, expires_in: app.env.STATE_TTL });

      const authorize = new URL(body.authorize_url);
      expect(`${authorize.origin}${authorize.pathname}`).toBe(`${FRONTEND_URL}/sso/authorize`);
      expect([...authorize.searchParams.keys()].sort()).toEqual(['client_id', 'response_type', 'state']);
      expect(authorize.searchParams.get('response_type')).toBe('code');
      expect(authorize.searchParams.get('client_id')).toBe(client.id);
      const state = authorize.searchParams.get('state')!;

      const code = new URL(body.code_url);
      expect(`${code.origin}${code.pathname}`).toBe(`${API_URL}/external/oauth2helper/code/get/${client.id}`);
      expect([...code.searchParams.entries()]).toEqual([['state', state]]);

      expect(body.accesstoken_request_url).toBe(`${FRONTEND_URL}/sso/token`);
    });

    it('issues the state as a JWT typed vc-state+jwt, signed with a published key and bound to the client', async () => {
      const { state } = await issueState(app, client.id);
      expect(stateHeader(state)).toMatchObject({ typ: STATE_TYP, alg: 'ES256', kid: expect.any(String) });
      const jwks = (await (await fetch(`${app.baseUrl}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
      const { payload } = await jwtVerify(state, createLocalJWKSet(jwks), { typ: STATE_TYP, issuer: app.baseUrl });
      expect(payload.client_id).toBe(client.id);
      expect(payload.redirect_url).toBeUndefined();
      expect(payload.exp! - payload.iat!).toBe(600);
    });

    it('issues a different state, with its own jti, on every call', async () => {
      const states = await Promise.all(Array.from({ length: 6 }, () => issueState(app, client.id).then((issued) => issued.state)));
      expect(new Set(states).size).toBe(6);
      expect(new Set(states.map((state) => stateClaims(state).jti)).size).toBe(6);
    });
  });

  describe('client errors', () => {
    it('answers 404 invalid_client for an unknown client', async () => {
      const response = await requestConfig(app, 'no-such-client');
      expect(response.status).toBe(404);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await response.json()).toEqual(errorBody('invalid_client'));
    });

    it('answers 404 invalid_client for a client once it is disabled', async () => {
      const disabled = await createClient(app);
      expect((await requestConfig(app, disabled.id)).status).toBe(200);
      await app.get(ClientsService).setEnabled(disabled.id, false);
      const response = await requestConfig(app, disabled.id);
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual(errorBody('invalid_client'));
    });

    it('answers 400 unauthorized_client for a client without the authorization_code grant', async () => {
      const machine = await createClient(app, { grants: ['client_credentials'] });
      const response = await requestConfig(app, machine.id);
      expect(response.status).toBe(400);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await response.json()).toEqual(errorBody('unauthorized_client'));
    });
  });

  describe('redirect_url', () => {
    it.each([
      ['an exact registered URL', EXACT],
      ['a loopback address in a CIDR pattern, any port', 'http://127.0.0.1:53123/cb'],
      ['another loopback address of the same /8 range', 'http://127.254.0.9:1/cb'],
      ['a LAN address of a CIDR pattern with a fixed port', 'http://192.168.17.4:8080/cb'],
    ])('accepts %s and binds it into the state', async (_name, redirectUrl) => {
      const response = await requestConfig(app, client.id, { redirect_url: redirectUrl });
      expect(response.status).toBe(200);
      const { authorize_url } = (await response.json()) as HelperConfigResponse;
      expect(stateClaims(new URL(authorize_url).searchParams.get('state')!).redirect_url).toBe(redirectUrl);
    });

    it.each([
      ['a URL that is not registered', 'https://other.example.test/callback'],
      ['a registered URL with another path', 'https://device.example.test/callback/more'],
      ['a relative URL', '/callback'],
      ['a URL without scheme', 'device.example.test/callback'],
      ['an ftp URL', 'ftp://device.example.test/callback'],
      ['a registered URL with userinfo', 'https://user@device.example.test/callback'],
      ['userinfo hiding another host', 'http://127.0.0.1:8080@evil.example.test/cb'],
      ['a registered URL with a fragment', 'https://device.example.test/callback#x'],
      ['a loopback URL with an empty fragment', 'http://127.0.0.1:8080/cb#'],
      ['127.0.0.1 spelled as a decimal number', 'http://2130706433:8080/cb'],
      ['127.0.0.1 spelled in hex', 'http://0x7f.0.0.1:8080/cb'],
      ['127.0.0.1 spelled as one hex number', 'http://0x7f000001:8080/cb'],
      ['127.0.0.1 spelled in octal', 'http://0177.0.0.1:8080/cb'],
      ['127.0.0.1 spelled short', 'http://127.1:8080/cb'],
      ['a path with a .. segment', 'http://127.0.0.1:8080/x/../cb'],
      ['a path with an encoded .. segment', 'http://127.0.0.1:8080/x/%2e%2e/cb'],
      ['a public address outside the range', 'http://8.8.8.8:8080/cb'],
      ['the address just past the loopback range', 'http://128.0.0.1:8080/cb'],
      ['a query on a CIDR-matched URL', 'http://127.0.0.1:8080/cb?next=https://evil.example.test'],
      ['another port than the pattern fixes', 'http://192.168.17.4:8081/cb'],
      ['another scheme than the pattern names', 'https://127.0.0.1:8080/cb'],
    ])('refuses %s with 400 invalid_request', async (_name, redirectUrl) => {
      const response = await requestConfig(app, client.id, { redirect_url: redirectUrl });
      expect(response.status).toBe(400);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await response.json()).toEqual(errorBody('invalid_request'));
    });

    it('refuses a repeated redirect_url parameter with 400 invalid_request, even when both values are allowed', async () => {
      const once = `redirect_url=${encodeURIComponent(EXACT)}`;
      expect((await requestConfig(app, client.id, once)).status).toBe(200);
      const response = await requestConfig(app, client.id, `${once}&${once}`);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual(errorBody('invalid_request'));
    });
  });

  describe('PKCE', () => {
    it('accepts an S256 code_challenge and binds it into the state', async () => {
      const response = await requestConfig(app, client.id, { code_challenge: CHALLENGE, code_challenge_method: 'S256' });
      expect(response.status).toBe(200);
      const { authorize_url } = (await response.json()) as HelperConfigResponse;
      expect(stateClaims(new URL(authorize_url).searchParams.get('state')!).code_challenge).toBe(CHALLENGE);
    });

    it.each([
      ['the plain method', { code_challenge: CHALLENGE, code_challenge_method: 'plain' }],
      ['a challenge without a method', { code_challenge: CHALLENGE }],
      ['a method without a challenge', { code_challenge_method: 'S256' }],
      ['a lower-case method name', { code_challenge: CHALLENGE, code_challenge_method: 's256' }],
      ['a challenge one character short', { code_challenge: CHALLENGE.slice(1), code_challenge_method: 'S256' }],
      ['a challenge in padded standard base64', { code_challenge: `${CHALLENGE.replace('-', '+')}=`, code_challenge_method: 'S256' }],
      ['a challenge with a character outside base64url', { code_challenge: `${CHALLENGE.slice(1)}+`, code_challenge_method: 'S256' }],
    ])('refuses %s with 400 invalid_request', async (_name, query) => {
      const response = await requestConfig(app, client.id, query);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual(errorBody('invalid_request'));
    });
  });
});
