import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { ModulesContainer } from '@nestjs/core';
import { DECORATORS } from '@nestjs/swagger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { ProviderLogoutReturnsService } from '../../../src/oidc/provider-logout-returns.service.js';
import { UsersService } from '../../../src/users/users.service.js';
import { DEVICE_GRANT, VerificationPage, startDeviceAuthorization } from '../../factories/device-flow.factory.js';
import { clientToken, PUBLISH_SCOPE, publish, validNotification } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { basicAuth, credentials, exchangeCode, issueTokens, LOOPBACK_PATTERN, LOOPBACK_REDIRECT, postForm, refresh } from '../../factories/token-flow.factory.js';
import { createSignInClient, newKek, registerProvider, throughForgingProvider } from '../../factories/upstream.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { startForgingProvider } from '../../setup/upstream/forging-provider.js';

type Schema = { $ref?: string; properties?: Record<string, Schema>; items?: Schema; type?: string };
type Content = Record<string, { schema?: Schema }>;
type Response = { description?: string; content?: Content; headers?: Record<string, unknown> };
type Operation = {
  summary?: string;
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { content: Content };
  responses: Record<string, Response>;
  security?: Record<string, string[]>[];
};
type Document = {
  info: { description: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Record<string, string>> };
};

const FORM = 'application/x-www-form-urlencoded';
const CLIENT_FIELDS = ['client_id', 'client_secret'];

/** Every form the service reads, with the fields it reads. */
const FORM_FIELDS: Record<string, string[]> = {
  'post /sso/token': ['grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'device_code', 'scope', ...CLIENT_FIELDS],
  'post /public/api/oauth2/token': ['grant_type', 'scope', 'resource', ...CLIENT_FIELDS],
  'post /sso/introspect': ['token', ...CLIENT_FIELDS],
  'post /sso/revoke': ['token', ...CLIENT_FIELDS],
  'post /sso/device_authorization': ['scope', ...CLIENT_FIELDS],
  'post /sso/authorize': ['response_type', 'client_id', 'state', 'csrf_token', 'username', 'password', 'idp', 'confirmation', 'decision', 'session'],
  'post /sso/device': ['csrf_token', 'user_code', 'session', 'username', 'password', 'idp', 'decision', 'approval'],
  'post /sso/userinfo': ['access_token'],
  'post /sso/logout': ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state', 'csrf_token'],
};
const CLIENT_AUTHENTICATED = ['/sso/token', '/public/api/oauth2/token', '/sso/introspect', '/sso/revoke', '/sso/device_authorization'];
const OAUTH_PREFIXES = [...CLIENT_AUTHENTICATED, '/sso/userinfo', '/external/oauth2helper/', '/sso/register', '/sso/register/'];
const PAGES = ['/sso/authorize', '/sso/device'];
/** Routes left out of the description on purpose: the issuer-path copy of the metadata, described on the metadata route. */
const UNDOCUMENTED = ['get /.well-known/oauth-authorization-server/*'];

describe('OpenAPI description', () => {
  let app: TestApp;
  let document: Document;
  /** What real requests were answered: method, documented path, status and media type. */
  const answers: { operation: string; status: number; mediaType: string }[] = [];

  const operations = () =>
    Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ key: `${method} ${path}`, path, method, operation })));

  const resolve = (schema: Schema | undefined): Schema | undefined =>
    schema?.$ref ? document.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema;

  async function answered(operation: string, response: globalThis.Response | { status: number; headers: Headers }) {
    if ('text' in response && typeof response.text === 'function' && !response.bodyUsed) await response.text();
    answers.push({ operation, status: response.status, mediaType: (response.headers.get('content-type') ?? '').split(';')[0] });
  }

  beforeAll(async () => {
    const logo = join(mkdtempSync(join(tmpdir(), 'voyage-connect-openapi-')), 'logo.svg');
    writeFileSync(logo, '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"></svg>');
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '60', KEYS_ENCRYPTION_KEY: newKek(), PORTAL_LOGO_FILE: logo });
    document = (await (await fetch(`${app.baseUrl}/docs-json`)).json()) as Document;
  });
  afterAll(() => app.close());

  it('lists no Authorization or Content-Type header parameter, and no required header parameter at all', () => {
    const headers = operations().flatMap(({ key, operation }) =>
      (operation.parameters ?? [])
        .filter((parameter) => parameter.in === 'header' && (parameter.required || ['authorization', 'content-type'].includes(parameter.name.toLowerCase())))
        .map((parameter) => `${key}: ${parameter.name}`),
    );
    expect(headers).toEqual([]);
  });

  it('documents every route the application serves', () => {
    const served: string[] = [];
    for (const module of app.get(ModulesContainer).values()) {
      for (const { metatype } of module.controllers.values()) {
        if (!metatype) continue;
        const base = String(Reflect.getMetadata(PATH_METADATA, metatype) ?? '');
        for (const name of Object.getOwnPropertyNames(metatype.prototype)) {
          const handler = metatype.prototype[name];
          const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
          if (method === undefined || name === 'constructor') continue;
          const path = `/${[base, String(Reflect.getMetadata(PATH_METADATA, handler) ?? '')].join('/')}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1').replace(/:(\w+)/g, '{$1}');
          const key = `${RequestMethod[method].toLowerCase()} ${path}`;
          if (Reflect.getMetadata(DECORATORS.API_EXCLUDE_ENDPOINT, handler)) expect(UNDOCUMENTED, key).toContain(key);
          else served.push(key);
        }
      }
    }
    expect(served.length).toBeGreaterThan(15);
    expect(operations().map(({ key }) => key).sort()).toEqual(served.sort());
  });

  it('describes the WebSocket stream, its refusals and every close code in words', () => {
    const { description } = document.info;
    expect(description).toContain('/voyage/notification/v1/ws/products');
    for (const code of ['1001', '1008', '1009', '1013', '4003', '401', '403', '503']) expect(description).toContain(code);
  });

  it('describes the form body of every form route with the fields it reads', () => {
    for (const [key, fields] of Object.entries(FORM_FIELDS)) {
      const [method, path] = key.split(' ');
      const body = document.paths[path]?.[method]?.requestBody;
      expect(Object.keys(body?.content ?? {}), key).toEqual([FORM]);
      expect(Object.keys(resolve(body!.content[FORM].schema)?.properties ?? {}).sort(), key).toEqual([...fields].sort());
    }
    const formRoutes = operations().filter(({ operation }) => operation.requestBody?.content[FORM]).map(({ key }) => key);
    expect(formRoutes.sort()).toEqual(Object.keys(FORM_FIELDS).sort());
  });

  it('documents every field the pages post', async () => {
    const client = await createClient(app, { grants: ['authorization_code', 'refresh_token', DEVICE_GRANT] });
    const user = await createUser(app);
    const fieldsOf = (html: string) => [...html.matchAll(/<(?:input|button)[^>]* name="([^"]+)"/g)].map(([, name]) => name);
    const documented = (key: string) => Object.keys(resolve(document.paths[key.split(' ')[1]].post.requestBody!.content[FORM].schema)!.properties!);

    const { authorize_url } = await issueState(app, client.id);
    const login = await fetch(authorize_url);
    expect(login.status).toBe(200);
    expect(documented('post /sso/authorize')).toEqual(expect.arrayContaining(fieldsOf(await login.text())));

    const { user_code } = await startDeviceAuthorization(app, client);
    const page = await VerificationPage.open(app);
    const posted = fieldsOf(page.html);
    await page.submit({ user_code });
    posted.push(...fieldsOf(page.html));
    await page.submit({ username: user.username, password: user.password });
    expect(page.html).toContain('value="approve"');
    posted.push(...fieldsOf(page.html));
    // The sign-in began a session: the next code asks "Continue as USER" or "Use another account".
    await page.submit({ user_code: (await startDeviceAuthorization(app, client)).user_code });
    expect(page.html).toContain('value="continue"');
    posted.push(...fieldsOf(page.html));
    expect(documented('post /sso/device')).toEqual(expect.arrayContaining(posted));
  });

  it('defines the security schemes it references: Basic or form credentials at the client-authenticated routes, Bearer at the notification routes', () => {
    const schemes = document.components.securitySchemes;
    expect(schemes.client_secret_basic).toMatchObject({ type: 'http', scheme: 'basic' });
    for (const { key, operation } of operations()) {
      for (const requirement of operation.security ?? []) for (const name of Object.keys(requirement)) expect(schemes[name], `${key} uses ${name}`).toBeDefined();
    }
    for (const path of CLIENT_AUTHENTICATED) expect(document.paths[path].post.security, path).toEqual([{ client_secret_basic: [] }, {}]);
    for (const method of ['get', 'post']) expect(document.paths['/voyage/notification/v1/notifications'][method].security).toEqual([{ bearer: [] }]);
    // Userinfo: the Bearer header, or (POST) the token as a form field, the empty requirement.
    expect(document.paths['/sso/userinfo'].get.security).toEqual([{ bearer: [] }]);
    expect(document.paths['/sso/userinfo'].post.security).toEqual([{ bearer: [] }, {}]);
  });

  it('gives every answer a schema, the OAuth routes their RFC 6749 error body, the others the service error body, and Retry-After to each 429 and 503', () => {
    for (const { key, path, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const where = `${key} ${status}`;
        // Redirects and a 304 (RFC 9110 §15.4.5) have no body.
        if (status === '302' || status === '303' || status === '304' || status === '204' || (key === 'post /sso/revoke' && status === '200')) {
          expect(response.content, where).toBeUndefined();
          continue;
        }
        expect(Object.keys(response.content ?? {}).length, where).toBeGreaterThan(0);
        for (const media of Object.values(response.content!)) expect(media.schema, where).toBeDefined();
        // /health answers its 503 at once, for load balancers, not for clients to retry.
        if (Number(status) >= 429 && status !== '500' && path !== '/health') expect(Object.keys(response.headers ?? {}), where).toContain('Retry-After');
        const json = response.content!['application/json']?.schema;
        if (Number(status) < 400 || !json) continue;
        const oauth = OAUTH_PREFIXES.some((prefix) => path === prefix || (prefix.endsWith('/') && path.startsWith(prefix)));
        const expected = oauth
          ? key.startsWith('get /external/oauth2helper/code') && status === '404'
            ? 'NoCodeDto'
            : 'OAuthErrorDto'
          : path === '/health'
            ? 'HealthResponseDto'
            : 'ErrorResponseDto';
        expect(json.$ref, where).toBe(`#/components/schemas/${expected}`);
      }
    }
  });

  it('has no summary or description that mentions a seed', () => {
    expect(JSON.stringify(document)).not.toMatch(/seed/i);
  });

  it('documents the status and media type of every answer the service gives to real requests', async () => {
    const subscriber = await createClient(app, { grants: ['client_credentials'] });
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    const helperClient = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    const user = await createUser(app);
    const wrongBasic = { authorization: basicAuth(subscriber.id, 'wrong') };

    // Token endpoints: success, refusals of the handler, and of Fastify before it.
    const form = (path: string, params: Record<string, string> | string, headers: Record<string, string> = {}) => postForm(app, path, params, headers);
    for (const path of CLIENT_AUTHENTICATED) {
      const operation = `post ${path}`;
      await answered(operation, await form(path, { grant_type: path === '/sso/token' ? 'refresh_token' : 'client_credentials' }, wrongBasic));
      await answered(operation, await form(path, '{}', { 'content-type': 'application/json' }));
      await answered(operation, await form(path, '<a/>', { 'content-type': 'application/xml' }));
      await answered(operation, await form(path, `x=${'a'.repeat(70_000)}`));
      await answered(operation, await form(path, 'grant_type=a&grant_type=b'));
    }
    const redirected = await issueState(app, helperClient.id, { redirect_url: LOOPBACK_REDIRECT });
    const login = await signIn(redirected.authorize_url, user);
    await answered('post /sso/authorize', login);
    const code = new URL(login.headers.get('location')!).searchParams.get('code')!;
    const tokens = await exchangeCode(app, helperClient, code);
    await answered('post /sso/token', tokens);
    await answered('post /sso/token', await exchangeCode(app, helperClient, code));
    await answered('post /sso/token', await refresh(app, helperClient, String(tokens.body.refresh_token)));
    await answered('post /sso/token', await form('/sso/token', { grant_type: DEVICE_GRANT, device_code: 'nope', ...credentials(helperClient) }));
    await answered('post /public/api/oauth2/token', await form('/public/api/oauth2/token', { grant_type: 'client_credentials', ...credentials(subscriber) }));
    await answered('post /public/api/oauth2/token', await form('/public/api/oauth2/token', { grant_type: 'client_credentials', resource: 'https://elsewhere.example', ...credentials(subscriber) }));
    await answered('post /sso/introspect', await form('/sso/introspect', { token: String(tokens.body.access_token), ...credentials(helperClient) }));
    await answered('post /sso/revoke', await form('/sso/revoke', { token: String(tokens.body.access_token), ...credentials(subscriber) }));
    await answered('post /sso/revoke', await form('/sso/revoke', { token: String(tokens.body.access_token), ...credentials(helperClient) }));
    await answered('post /sso/device_authorization', await form('/sso/device_authorization', credentials(helperClient)));
    const deviceClient: TestClient = await createClient(app, { grants: [DEVICE_GRANT] });
    await answered('post /sso/device_authorization', await form('/sso/device_authorization', { scope: 'not-registered', ...credentials(deviceClient) }));
    await answered('post /sso/device_authorization', await form('/sso/device_authorization', credentials(deviceClient)));

    // The helper's configuration and code poll.
    const config = (query = '', clientId = helperClient.id) => fetch(`${app.baseUrl}/external/oauth2helper/config/${clientId}${query}`, { method: 'POST' });
    await answered('post /external/oauth2helper/config/{client_id}', await config());
    await answered('post /external/oauth2helper/config/{client_id}', await config('?redirect_url=https://evil.example/cb'));
    await answered('post /external/oauth2helper/config/{client_id}', await config('', 'unknown-client'));
    await answered('post /external/oauth2helper/config/{client_id}', await config('', subscriber.id));
    const poll = 'get /external/oauth2helper/code/get/{client_id}';
    const polling = await issueState(app, helperClient.id);
    await answered('post /sso/authorize', await signIn(polling.authorize_url, user));
    await answered(poll, await fetch(polling.code_url));
    await answered(poll, await fetch(polling.code_url));
    const { code_url, authorize_url } = await issueState(app, helperClient.id);
    await answered(poll, await fetch(code_url));
    await answered(poll, await fetch(`${app.baseUrl}/external/oauth2helper/code/get/${helperClient.id}?state=forged`));

    // The pages.
    await answered('get /sso/authorize', await fetch(authorize_url));
    await answered('get /sso/authorize', await fetch(`${app.baseUrl}/sso/authorize?response_type=code&client_id=${helperClient.id}&state=forged`));
    const loginForm = new URLSearchParams(new URL(authorize_url).searchParams);
    const postLogin = (body: URLSearchParams, cookie = '') =>
      fetch(`${app.baseUrl}/sso/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': FORM, cookie }, body });
    await answered('post /sso/authorize', await postLogin(new URLSearchParams({ response_type: 'code' })));
    await answered('post /sso/authorize', await postLogin(loginForm));
    const page = await VerificationPage.open(app);
    await answered('get /sso/device', page);
    await answered('post /sso/device', await page.submit({ user_code: 'BCDF-GHJK' }));
    await answered('post /sso/device', await page.submit({ csrf_token: 'forged' }));
    await answered('post /sso/device', await page.submit({ user_code: (await startDeviceAuthorization(app, deviceClient)).user_code }));

    // The identity provider callback. Only its answers matter here, so the provider is the
    // forging one, which sends the browser back at once (no browser needed).
    const forge = await startForgingProvider();
    try {
      await registerProvider(app, forge, 'forge', 'Forge');
      const forgeClient = await createSignInClient(app, ['forge'], { redirectPatterns: [LOOPBACK_PATTERN] });
      /** `cancelled`: the provider's answer is an error (the user cancelled there). */
      const throughForge = async (query: Record<string, string> = {}, cancelled = false) => {
        const start = await fetch((await issueState(app, forgeClient.id, query)).authorize_url, { redirect: 'manual' });
        await answered('get /sso/authorize', start);
        const cookie = start.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ');
        const back = new URL((await fetch(start.headers.get('location')!, { redirect: 'manual' })).headers.get('location')!);
        if (cancelled) back.search = new URLSearchParams({ error: 'access_denied', state: back.searchParams.get('state')! }).toString();
        return fetch(back, { redirect: 'manual', headers: { cookie } });
      };
      const callback = 'get /sso/callback/{name}';
      await answered(callback, await throughForge());
      await answered(callback, await throughForge({ redirect_url: LOOPBACK_REDIRECT }));
      await answered(callback, await throughForge({ redirect_url: LOOPBACK_REDIRECT }, true));
      // The confirmation after the provider's sign-in: Continue sends the browser to the device.
      const confirmed = await throughForgingProvider((await issueState(app, forgeClient.id, { redirect_url: LOOPBACK_REDIRECT })).authorize_url, { confirm: true });
      expect(confirmed.status).toBe(302);
      await answered('post /sso/authorize', confirmed);
      await answered(callback, await fetch(`${app.baseUrl}/sso/callback/forge?code=x&state=unknown`));
      await app.get(UsersService).disable('forge:forged-subject');
      await answered(callback, await throughForge());
      // A device whose client signs in through the provider only: the code step sends the browser there.
      const forgeDevice = await createSignInClient(app, ['forge'], { grants: [DEVICE_GRANT] });
      const codeForm = await fetch(`${app.baseUrl}/sso/device`);
      const csrf = codeForm.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ');
      const csrfToken = /name="csrf_token" value="([^"]+)"/.exec(await codeForm.text())![1];
      const userCode = (await startDeviceAuthorization(app, forgeDevice)).user_code;
      const toProvider = await fetch(`${app.baseUrl}/sso/device`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: csrf },
        body: new URLSearchParams({ csrf_token: csrfToken, user_code: userCode }),
      });
      expect(toProvider.status).toBe(303);
      await answered('post /sso/device', toProvider);
    } finally {
      await forge.close();
    }

    // The home page and the portal's logo (fetched again: 304).
    await answered('get /', await fetch(`${app.baseUrl}/`));
    const logo = await fetch(`${app.baseUrl}/portal/logo`);
    await answered('get /portal/logo', logo);
    await answered('get /portal/logo', await fetch(`${app.baseUrl}/portal/logo`, { headers: { 'if-none-match': logo.headers.get('etag')! } }));

    // Logout: the signed-out page, a registered address, a refused link; and the confirmation of a signed-in browser.
    const leaving = await app.get(ClientsService).create({ name: 'leaving', redirectPatterns: [LOOPBACK_PATTERN], postLogoutRedirectUris: ['https://app.example/bye'] });
    const logout = (params: Record<string, string>, init: RequestInit = {}) => fetch(`${app.baseUrl}/sso/logout?${new URLSearchParams(params)}`, { redirect: 'manual', ...init });
    await answered('get /sso/logout', await logout({}));
    await answered('get /sso/logout', await logout({ client_id: leaving.client_id, post_logout_redirect_uri: 'https://app.example/bye' }));
    await answered('get /sso/logout', await logout({ id_token_hint: 'not-a-jwt' }));
    const postLogout = (fields: Record<string, string>, cookie = '') =>
      fetch(`${app.baseUrl}/sso/logout`, { method: 'POST', redirect: 'manual', headers: { 'content-type': FORM, cookie }, body: new URLSearchParams(fields) });
    await answered('post /sso/logout', await postLogout({}));
    await answered('post /sso/logout', await postLogout({ client_id: leaving.client_id, post_logout_redirect_uri: 'https://app.example/bye' }));
    await answered('post /sso/logout', await postLogout({ post_logout_redirect_uri: 'https://app.example/bye' }));
    await answered('post /sso/logout', await postLogout({ csrf_token: 'forged' }));
    // Back from a provider's sign-out: on to the app for the service's own state, else "You're signed out".
    const returning = await app.get(ProviderLogoutReturnsService).issue({ clientId: leaving.client_id, redirectUri: 'https://app.example/bye', state: 's' });
    await answered('get /sso/logout/done', await fetch(`${app.baseUrl}/sso/logout/done?state=${returning}`, { redirect: 'manual' }));
    await answered('get /sso/logout/done', await fetch(`${app.baseUrl}/sso/logout/done?state=forged`, { redirect: 'manual' }));

    // Notifications.
    const subscribeToken = await clientToken(app, subscriber);
    const publishToken = await clientToken(app, publisher, PUBLISH_SCOPE);
    const notifications = `${app.baseUrl}/voyage/notification/v1/notifications`;
    await answered('post /voyage/notification/v1/notifications', await publish(app, undefined, validNotification(subscriber.id)));
    await answered('post /voyage/notification/v1/notifications', await publish(app, subscribeToken, validNotification(subscriber.id)));
    await answered('post /voyage/notification/v1/notifications', await publish(app, publishToken, { recipient: subscriber.id }));
    await answered('post /voyage/notification/v1/notifications', await publish(app, publishToken, validNotification(subscriber.id)));
    const raw = (headers: Record<string, string>, body: string) => fetch(notifications, { method: 'POST', headers: { authorization: `Bearer ${publishToken}`, ...headers }, body });
    await answered('post /voyage/notification/v1/notifications', await raw({ 'content-type': 'application/xml' }, '<a/>'));
    await answered('post /voyage/notification/v1/notifications', await raw({ 'content-type': 'application/json' }, JSON.stringify({ pad: 'a'.repeat(70_000) })));
    const batch = 'post /voyage/notification/v1/notifications/batch';
    const postBatch = (body: string, token = publishToken, contentType = 'application/json') =>
      fetch(`${notifications}/batch`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, body });
    await answered(batch, await postBatch(JSON.stringify([validNotification(subscriber.id), { recipient: subscriber.id }])));
    await answered(batch, await postBatch('{}'));
    await answered(batch, await postBatch('[]', 'garbage'));
    await answered(batch, await postBatch('[]', subscribeToken));
    await answered(batch, await postBatch(JSON.stringify(Array.from({ length: 1001 }, () => ({})))));
    await answered(batch, await postBatch('<a/>', publishToken, 'application/xml'));
    const history = (query: string, token?: string) => fetch(`${notifications}${query}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    await answered('get /voyage/notification/v1/notifications', await history('?since=2026-01-01T00:00:00Z', subscribeToken));
    await answered('get /voyage/notification/v1/notifications', await history('?since=yesterday', subscribeToken));
    await answered('get /voyage/notification/v1/notifications', await history('?since=2026-01-01T00:00:00Z'));
    await answered('get /voyage/notification/v1/notifications', await history('?since=2026-01-01T00:00:00Z', publishToken));
    // The event stream: its 200 is read until its first comment, then left.
    const events = 'get /voyage/notification/v1/sse/products';
    const eventStream = (headers: Record<string, string>, query = '') => fetch(`${app.baseUrl}/voyage/notification/v1/sse/products${query}`, { headers });
    const opened = await eventStream({ authorization: `Bearer ${subscribeToken}` });
    await opened.body!.getReader().read();
    await answered(events, { status: opened.status, headers: opened.headers });
    await opened.body!.cancel().catch(() => {});
    await answered(events, await eventStream({}));
    await answered(events, await eventStream({ authorization: `Bearer ${publishToken}` }));
    await answered(events, await eventStream({ authorization: `Bearer ${subscribeToken}`, accept: 'application/json' }));
    await answered(events, await eventStream({ authorization: `Bearer ${subscribeToken}`, 'last-event-id': 'x' }));

    // Userinfo: a user's token with openid, one without, none, a bad one; the POST's body too.
    const oidcClient = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN], scopes: ['openid', 'profile'] });
    const openidToken = (await issueTokens(app, oidcClient, await createUser(app), { redirectUrl: LOOPBACK_REDIRECT, scope: 'openid profile' })).access_token;
    const userinfo = (method: 'GET' | 'POST', token?: string, init: RequestInit = {}) =>
      fetch(`${app.baseUrl}/sso/userinfo`, { method, ...init, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(init.headers as Record<string, string>) } });
    for (const method of ['GET', 'POST'] as const) {
      const operation = `${method.toLowerCase()} /sso/userinfo`;
      await answered(operation, await userinfo(method, openidToken));
      await answered(operation, await userinfo(method));
      await answered(operation, await userinfo(method, 'garbage'));
      await answered(operation, await userinfo(method, await clientToken(app, subscriber)));
    }
    const userinfoForm = (body: string, token?: string, contentType = FORM) => userinfo('POST', token, { body, headers: { 'content-type': contentType } });
    await answered('post /sso/userinfo', await userinfoForm(new URLSearchParams({ access_token: openidToken }).toString()));
    await answered('post /sso/userinfo', await userinfoForm(new URLSearchParams({ access_token: openidToken }).toString(), openidToken));
    await answered('post /sso/userinfo', await userinfoForm(JSON.stringify({ access_token: openidToken }), undefined, 'application/json'));
    await answered('post /sso/userinfo', await userinfoForm(`x=${'a'.repeat(70_000)}`));

    // Health, metrics, keys, metadata.
    for (const path of ['/health', '/health/live', '/metrics', '/.well-known/jwks.json', '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      await answered(`get ${path}`, await fetch(`${app.baseUrl}${path}`));
    }

    // Registration (RFC 7591/7592): each answer but the burst's 429 (REGISTRATION_RATE_LIMIT registrations first).
    const registrar = await createClient(app, { grants: ['client_credentials'], scopes: ['clients:register'] });
    const registerToken = await clientToken(app, registrar, 'clients:register');
    const register = (body: string, token = registerToken) =>
      fetch(`${app.baseUrl}/sso/register`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
    const registered = await register(JSON.stringify({ client_name: 'OpenAPI registration' }));
    const registration = (await registered.clone().json()) as { client_id: string; registration_client_uri: string; registration_access_token: string };
    await answered('post /sso/register', registered);
    await answered('post /sso/register', await register(JSON.stringify({ client_name: 'Greedy', scope: 'admin:write' })));
    await answered('post /sso/register', await register('{}', 'garbage'));
    await answered('post /sso/register', await register('{}', subscribeToken));
    await answered('post /sso/register', await register(JSON.stringify({ client_name: 'Large', pad: 'a'.repeat(70_000) })));
    const manage = (method: string, token: string, body?: unknown) =>
      fetch(registration.registration_client_uri, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const configuration = 'get /sso/register/{clientId}';
    await answered(configuration, await manage('GET', registration.registration_access_token));
    await answered(configuration, await manage('GET', 'garbage'));
    await answered('put /sso/register/{clientId}', await manage('PUT', registration.registration_access_token, { client_id: registration.client_id, client_name: 'OpenAPI registration, renamed' }));
    await answered('put /sso/register/{clientId}', await manage('PUT', registration.registration_access_token, { client_id: 'another' }));
    await answered('put /sso/register/{clientId}', await manage('PUT', 'garbage', {}));
    await answered('delete /sso/register/{clientId}', await manage('DELETE', 'garbage'));
    await answered('delete /sso/register/{clientId}', await manage('DELETE', registration.registration_access_token));

    // The admin API: each route's answer, and its refusals of no token and of a token without the scope.
    const admin = await createClient(app, { grants: ['client_credentials'], scopes: ['admin:read', 'admin:write'] });
    const adminToken = await clientToken(app, admin, 'admin:read admin:write');
    const adminCall = (method: string, path: string, token: string | null = adminToken, body?: unknown) =>
      fetch(`${app.baseUrl}/admin/v1${path}`, {
        method,
        headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const adminUser = { username: 'openapi-admin-user', password: 'correct horse battery staple' };
    const adminRoutes: [string, string, string, unknown?][] = [
      ['get /admin/v1/clients', 'GET', '/clients'],
      ['get /admin/v1/clients', 'GET', '/clients?limit=0'],
      ['get /admin/v1/clients/{clientId}', 'GET', `/clients/${subscriber.id}`],
      ['get /admin/v1/clients/{clientId}', 'GET', '/clients/unknown'],
      ['get /admin/v1/users', 'GET', '/users'],
      ['get /admin/v1/users', 'GET', '/users?after=x'],
      ['post /admin/v1/users', 'POST', '/users', adminUser],
      ['post /admin/v1/users', 'POST', '/users', adminUser],
      ['post /admin/v1/users', 'POST', '/users', { username: 'x', password: 'short' }],
      ['post /admin/v1/users/{username}/disable', 'POST', `/users/${adminUser.username}/disable`],
      ['post /admin/v1/users/{username}/disable', 'POST', '/users/nobody/disable'],
      ['post /admin/v1/users/{username}/enable', 'POST', `/users/${adminUser.username}/enable`],
      ['post /admin/v1/users/{username}/enable', 'POST', '/users/nobody/enable'],
      ['get /admin/v1/users/{username}/grants', 'GET', `/users/${adminUser.username}/grants`],
      ['get /admin/v1/users/{username}/grants', 'GET', '/users/nobody/grants'],
      ['delete /admin/v1/users/{username}/grants', 'DELETE', `/users/${adminUser.username}/grants`],
      ['delete /admin/v1/users/{username}/grants', 'DELETE', '/users/nobody/grants'],
      ['delete /admin/v1/users/{username}/grants/{grantId}', 'DELETE', `/users/${adminUser.username}/grants/00000000-0000-4000-8000-000000000000`],
      ['get /admin/v1/keys', 'GET', '/keys'],
      ['post /admin/v1/keys/rotate', 'POST', '/keys/rotate'],
      ['post /admin/v1/keys/rotate', 'POST', '/keys/rotate'],
      ['get /admin/v1/identity-providers', 'GET', '/identity-providers'],
      ['get /admin/v1/events', 'GET', '/events'],
      ['get /admin/v1/events', 'GET', '/events?since=yesterday'],
    ];
    for (const [operation, method, path, body] of adminRoutes) await answered(operation, await adminCall(method, path, adminToken, body));
    // One device signed in, signed out by its grant id.
    const adminDevice = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    await issueTokens(app, adminDevice, adminUser, { redirectUrl: LOOPBACK_REDIRECT });
    const [grant] = (await (await adminCall('GET', `/users/${adminUser.username}/grants`)).json()) as { grant_id: string }[];
    await answered('delete /admin/v1/users/{username}/grants/{grantId}', await adminCall('DELETE', `/users/${adminUser.username}/grants/${grant.grant_id}`));
    for (const [operation, method, path, body] of adminRoutes) {
      await answered(operation, await adminCall(method, path, null, body));
      await answered(operation, await adminCall(method, path, subscribeToken, body));
    }

    const undocumented = answers.filter(({ operation, status, mediaType }) => {
      const [method, path] = operation.split(' ');
      const response = document.paths[path]?.[method]?.responses[String(status)];
      if (!response) return true;
      return response.content !== undefined && mediaType !== '' && !(mediaType in response.content);
    });
    expect(undocumented.map(({ operation, status, mediaType }) => `${operation} ${status} ${mediaType}`)).toEqual([]);
    // Every documented status was seen, but 5xx, 429 of the pages (many failed sign-ins), 403 of /metrics and 404 of the logo (configuration).
    const seen = new Set(answers.map(({ operation, status }) => `${operation} ${status}`));
    const unseen = operations()
      .flatMap(({ key, operation }) => Object.keys(operation.responses).map((status) => `${key} ${status}`))
      .filter((entry) => !seen.has(entry) && !/ 5\d\d$/.test(entry) && !/^post \/sso\/(authorize|device|register) 429$/.test(entry) && entry !== 'get /metrics 403' && entry !== 'get /portal/logo 404');
    expect(unseen).toEqual([]);
  });
});
