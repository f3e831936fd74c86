import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import type { GrantType } from '../../src/clients/client.entity.js';
import { ClientsService } from '../../src/clients/clients.service.js';
import { IdentityProvidersService } from '../../src/identity-providers/identity-providers.service.js';
import { query } from '../setup/database.js';
import { freePort } from '../setup/free-port.js';
import type { TestApp } from '../setup/test-app.js';
import type { ForgingProvider } from '../setup/upstream/forging-provider.js';
import type { UpstreamAccount, UpstreamProvider } from '../setup/upstream/upstream-provider.js';
import type { TestClient } from './oauth.factory.js';

/**
 * Signing in through an identity provider from the outside: the service registered at a provider
 * and the provider here, clients that sign in through it, and the device's own callback.
 */

/** A KEYS_ENCRYPTION_KEY of its own for each test app (64 hex digits). */
export const newKek = () => randomBytes(32).toString('hex');

export const ALICE: UpstreamAccount = { sub: 'alice-sub', preferred_username: 'alice', name: 'Alice Liddell', email: 'alice@example.test', email_verified: true, password: 'rabbit-hole' };

/** A provider registered here, with what the operator gave for it. */
export interface RegisteredProvider {
  name: string;
  clientId: string;
  clientSecret: string;
}

/**
 * Registers the service as a confidential client at the provider (redirect URI: its callback here;
 * post-logout redirect URI: /sso/logout/done, where the provider's sign-out comes back) and the
 * provider here as NAME, as an operator does with idp:create.
 */
export async function registerProvider(
  app: TestApp,
  upstream: UpstreamProvider | ForgingProvider,
  name: string,
  displayName: string,
  mode: 'broker' | 'relay' = 'broker',
  settings: { trustEmail?: boolean } = {},
): Promise<RegisteredProvider> {
  const clientId = `voyage-${name}`;
  const clientSecret = `upstream-secret-${randomBytes(16).toString('hex')}`;
  if ('registerClient' in upstream) {
    await upstream.registerClient({
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [`${app.baseUrl}/sso/callback/${name}`],
      post_logout_redirect_uris: [`${app.baseUrl}/sso/logout/done`],
    });
  }
  await app.get(IdentityProvidersService).create({ name, issuer: upstream.issuer, clientId, displayName, mode, ...settings }, clientSecret);
  return { name, clientId, clientSecret };
}

let sequence = 0;

/** A client whose users sign in with `signIn` (defaults: the helper flow's grants, no redirect patterns). */
export async function createSignInClient(
  app: TestApp,
  signIn: string[],
  options: { grants?: GrantType[]; redirectPatterns?: string[]; scopes?: string[]; postLogoutRedirectUris?: string[] } = {},
): Promise<TestClient & { name: string }> {
  const name = `Device ${process.pid}-${++sequence}`;
  const created = await app.get(ClientsService).create({ name, signIn, ...options });
  return { id: created.client_id, secret: created.client_secret, name };
}

/** The device's own callback (a redirect_url): records what the browser brings back. */
export async function startDeviceCallback() {
  const port = await freePort();
  const received: URL[] = [];
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url!, `http://127.0.0.1:${port}`);
    if (url.pathname === '/callback') received.push(url); // the browser also asks for /favicon.ico
    response.end('device got the answer');
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}/callback`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The portal user linked to a provider's subject (NAME:sub), or undefined. */
export async function linkedUser(app: TestApp, provider: string, sub: string) {
  const [row] = await query<{ id: string; username: string; profile: Record<string, unknown> }>(
    app.databaseUrl,
    'SELECT id, username, profile FROM portal_users WHERE provider = $1 AND upstream_subject = $2',
    [provider, sub],
  );
  return row;
}

/** How many rows what a sign-in issues or links has: a failed sign-in must leave them all as they were. */
export async function issuedRows(app: TestApp) {
  const [row] = await query<Record<'authorizations' | 'authorization_codes' | 'grants' | 'brokered_users' | 'upstream_sessions', number>>(
    app.databaseUrl,
    `SELECT (SELECT count(*)::int FROM authorizations) AS authorizations,
            (SELECT count(*)::int FROM authorization_codes) AS authorization_codes,
            (SELECT count(*)::int FROM grants) AS grants,
            (SELECT count(*)::int FROM portal_users WHERE upstream_issuer IS NOT NULL) AS brokered_users,
            (SELECT count(*)::int FROM upstream_sessions) AS upstream_sessions`,
  );
  return row;
}

/** The text of the page's first heading (bounded by the context's default timeout). */
export const heading = (page: Page) => page.getByRole('heading', { level: 1 }).textContent();

/**
 * The next answer of GET /sso/callback/* in this page, to read its status and headers: start
 * waiting before the step that leads there.
 */
export const nextCallback = (page: Page) => page.waitForResponse((response) => new URL(response.url()).pathname.startsWith('/sso/callback/'), { timeout: 15_000 });

/**
 * Signs in on the provider's page (where `authorizeUrl` leads) but holds the browser's way back:
 * the provider's redirects after the sign-in are followed with the browser's cookies up to the
 * callback URL, which is returned unloaded, with the cookies the browser would send it.
 * (Playwright routes see only the first request of a redirect chain: the form's POST.)
 */
export async function holdCallback(app: TestApp, page: Page, authorizeUrl: string, credentials: { username: string; password: string }) {
  const callbackPrefix = `${app.baseUrl}/sso/callback/`;
  let held = '';
  await page.goto(authorizeUrl);
  const provider = new URL(page.url()).origin;
  await page.route(`${provider}/interaction/*/login`, async (route) => {
    let response = await route.fetch({ maxRedirects: 0 });
    for (let hop = 0; hop < 10 && !held && response.status() >= 300 && response.status() < 400; hop++) {
      const location = new URL(response.headers().location, provider).href;
      if (location.startsWith(callbackPrefix)) held = location;
      else response = await page.context().request.get(location, { maxRedirects: 0 });
    }
    await route.fulfill({ status: 200, contentType: 'text/plain', body: 'held' });
  });
  await page.locator('input[name="login"]').fill(credentials.username);
  await page.locator('input[name="password"]').fill(credentials.password);
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByText('held').waitFor();
  await page.unrouteAll();
  if (!held) throw new Error('the provider did not send the browser back to the callback');
  const cookies = await page.context().cookies(held);
  return { url: held, cookie: cookies.map(({ name, value }) => `${name}=${value}`).join('; ') };
}

/**
 * A sign-in link followed as a browser would, through the forging provider (which sends the
 * browser straight back): the redirect there, the binding cookie carried to the callback. The
 * callback's answer, unread; with `confirm`, a confirmation page it shows is answered Continue
 * and that answer is returned instead.
 */
export async function throughForgingProvider(authorizeUrl: string, options: { confirm?: boolean } = {}): Promise<Response> {
  const start = await fetch(authorizeUrl, { redirect: 'manual' });
  expect(start.status).toBe(302);
  const binding = cookiesSet(start);
  expect(binding).toContain('vc_upstream=');
  const atProvider = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const callback = await fetch(atProvider.headers.get('location')!, { redirect: 'manual', headers: { cookie: binding } });
  if (!options.confirm || callback.status !== 200) return callback;
  const html = await callback.text();
  const fields = Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, name, value]) => [name, value.replaceAll('&amp;', '&')]));
  expect(fields).toHaveProperty('confirmation');
  return fetch(new URL('/sso/authorize', authorizeUrl), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `${binding}; ${cookiesSet(callback)}` },
    body: new URLSearchParams({ ...fields, decision: 'continue' }),
  });
}

const cookiesSet = (response: Response) =>
  response.headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .join('; ');

/**
 * After a helper link's sign-in at a provider: the service's page asking to continue to the
 * device; presses Continue (or Cancel) and waits for where that leads.
 */
export async function confirmSignIn(page: Page, decision: 'Continue' | 'Cancel' = 'Continue'): Promise<void> {
  expect(await heading(page)).toMatch(/^Continue to /);
  const callback = page.url();
  await page.getByRole('button', { name: decision, exact: true }).click();
  await page.waitForURL((url) => url.href !== callback);
  await page.waitForLoadState();
}
