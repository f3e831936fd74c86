import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import type { Page } from 'playwright-core';
import { freePort } from '../free-port.js';

const SCRIPT = fileURLToPath(new URL('./oidc-provider-process.mjs', import.meta.url));
const READY_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;

export interface UpstreamAccount {
  sub: string;
  preferred_username?: string;
  name?: string;
  email?: string;
  email_verified?: boolean;
  password: string;
}

/** Client metadata as oidc-provider takes it; without `client_secret` the client is public (PKCE only). */
export interface UpstreamClient {
  client_id: string;
  client_secret?: string;
  redirect_uris: string[];
  post_logout_redirect_uris?: string[];
  token_endpoint_auth_method?: 'client_secret_basic' | 'client_secret_post' | 'none';
  grant_types?: string[];
}

export interface UpstreamProviderOptions {
  accounts?: UpstreamAccount[];
  clients?: UpstreamClient[];
  /** Lifetimes in seconds (defaults: access and ID tokens 300, refresh tokens 3600). */
  ttl?: { accessToken?: number; idToken?: number; refreshToken?: number };
  /** Every refresh answers a new refresh token and consumes the old one (default true). */
  rotateRefreshToken?: boolean;
  /** Put the profile and email claims in the ID token too, not only at userinfo (default false). */
  claimsInIdToken?: boolean;
  /** Private signing keys; by default one RS256 key is generated for this provider. */
  jwks?: { keys: JWK[] };
  port?: number;
}

export interface UpstreamProvider {
  issuer: string;
  port: number;
  /** Ends the provider for good (SIGTERM, then SIGKILL) and removes its state. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL: the provider is down (connections refused) until restart(). Idempotent. */
  kill(): Promise<void>;
  /** SIGSTOP: connections are accepted but never answered, until resume(). */
  pause(): void;
  resume(): void;
  /** The provider back on the same port, with the same keys, accounts, grants and tokens. */
  restart(): Promise<void>;
  /** The account disappears: its next refresh answers invalid_grant. */
  deleteAccount(sub: string): Promise<void>;
  /** Registers one more client while running (kept across restart()). */
  registerClient(client: UpstreamClient): Promise<void>;
  /**
   * From now on requests to these paths (`/token`, `/.well-known/openid-configuration`…) wait
   * that long before the provider starts on them, and one whose client went away meanwhile is
   * never started on; `delay({})` ends it (so does restart()).
   */
  delay(milliseconds: Record<string, number>): Promise<void>;
  /** Everything the process wrote on stdout and stderr, across restarts. */
  output(): string;
}

async function generateSigningKeys(): Promise<{ keys: JWK[] }> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { keys: [{ ...(await exportJWK(privateKey)), kid: crypto.randomUUID(), alg: 'RS256', use: 'sig' }] };
}

function isRunning(child: ChildProcess | undefined): child is ChildProcess {
  return child !== undefined && child.exitCode === null && child.signalCode === null;
}

/** Resolves when the process prints its ready line; rejects when it exits first or after READY_TIMEOUT_MS. */
function waitForReady(child: ChildProcess, output: () => string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`the upstream provider was not ready within ${READY_TIMEOUT_MS} ms:\n${output()}`)), READY_TIMEOUT_MS);
    const onData = () => {
      if (output().split('\n').some((line) => line.startsWith('{"ready":true'))) done();
    };
    const onExit = () => fail(new Error(`the upstream provider exited before it was ready:\n${output()}`));
    function done() {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      resolve();
    }
    function fail(error: Error) {
      done();
      child.kill('SIGKILL');
      reject(error);
    }
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Starts oidc-provider in its own process on 127.0.0.1 (see oidc-provider-process.mjs). */
export async function startUpstreamProvider(options: UpstreamProviderOptions = {}): Promise<UpstreamProvider> {
  const port = options.port ?? (await freePort());
  const issuer = `http://127.0.0.1:${port}`;
  const stateDir = await mkdtemp(join(tmpdir(), 'voyage-connect-upstream-'));
  const config = JSON.stringify({
    port,
    accounts: options.accounts ?? [],
    clients: options.clients ?? [],
    jwks: options.jwks ?? (await generateSigningKeys()),
    ttl: { AccessToken: options.ttl?.accessToken, IdToken: options.ttl?.idToken, RefreshToken: options.ttl?.refreshToken },
    rotateRefreshToken: options.rotateRefreshToken ?? true,
    claimsInIdToken: options.claimsInIdToken ?? false,
    stateFile: join(stateDir, 'state.json'),
    // The same cookie key after restart(): the browser's session at the provider stays valid.
    cookieKey: crypto.randomUUID(),
    exitWithParent: true,
  });
  let output = '';
  let child: ChildProcess | undefined;
  let stopped = false;

  async function launch() {
    child = spawn(process.execPath, [SCRIPT, String(port)], {
      env: { ...process.env, UPSTREAM_PROVIDER_CONFIG: config },
      stdio: ['pipe', 'pipe', 'pipe'], // stdin stays open while this process lives (exitWithParent)
    });
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    await waitForReady(child, () => output);
  }

  async function end(signal: 'SIGTERM' | 'SIGKILL') {
    if (!isRunning(child)) return;
    const exited = once(child, 'exit');
    child.kill('SIGCONT'); // a paused process handles SIGTERM only once it runs again
    child.kill(signal);
    const timer = setTimeout(() => child?.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  async function post(path: string, body?: unknown) {
    const response = await fetch(`${issuer}${path}`, {
      method: 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(5_000),
    });
    if (!response.ok) throw new Error(`POST ${path} answered ${response.status}`);
  }

  await launch().catch(async (error: unknown) => {
    await rm(stateDir, { recursive: true, force: true });
    throw error;
  });

  return {
    issuer,
    port,
    async stop() {
      stopped = true;
      await end('SIGTERM');
      await rm(stateDir, { recursive: true, force: true });
    },
    kill: () => end('SIGKILL'),
    pause: () => void (isRunning(child) && child.kill('SIGSTOP')),
    resume: () => void (isRunning(child) && child.kill('SIGCONT')),
    async restart() {
      if (stopped) throw new Error('the upstream provider was stopped for good');
      await end('SIGTERM');
      await launch();
    },
    deleteAccount: (sub) => post(`/test/accounts/${encodeURIComponent(sub)}/delete`),
    registerClient: (client) => post('/test/clients', client),
    delay: (milliseconds) => post('/test/delays', milliseconds),
    output: () => output,
  };
}

/** Waits until the browser has left the provider's sign-in pages (bounded). */
async function leaveInteraction(page: Page, providerOrigin: string) {
  const refused = page.getByRole('alert');
  const left = page.waitForURL((url) => url.origin !== providerOrigin || !url.pathname.startsWith('/interaction/'), { waitUntil: 'commit', timeout: 10_000 });
  const shown = refused.waitFor({ timeout: 10_000 });
  left.catch(() => {}); // the loser of the race below still settles later
  shown.catch(() => {});
  await Promise.race([left, shown]);
  if (await refused.isVisible()) throw new Error(`the upstream provider refused the sign-in: ${await refused.textContent()}`);
}

/**
 * On the upstream provider's sign-in page (where voyage-connect sent the browser): signs in and
 * waits until the provider has sent the browser back (consent is granted by the provider itself).
 * A browser context that already signed in there is sent back without the page (single sign-on):
 * use a fresh context, or clear its cookies, to see the page again.
 */
export async function signInAtUpstream(page: Page, credentials: { username: string; password: string }): Promise<void> {
  await page.locator('input[name="login"]').waitFor({ timeout: 10_000 });
  const providerOrigin = new URL(page.url()).origin;
  await page.locator('input[name="login"]').fill(credentials.username);
  await page.locator('input[name="password"]').fill(credentials.password);
  await page.getByRole('button', { name: 'Sign-in' }).click({ noWaitAfter: true });
  await leaveInteraction(page, providerOrigin);
}

/** On the upstream provider's sign-in page: presses Cancel (the provider answers error=access_denied). */
export async function cancelAtUpstream(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Cancel' }).waitFor({ timeout: 10_000 });
  const providerOrigin = new URL(page.url()).origin;
  await page.getByRole('button', { name: 'Cancel' }).click({ noWaitAfter: true });
  await leaveInteraction(page, providerOrigin);
}
