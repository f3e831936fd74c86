import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { listenForCallback } from './callback-server.js';
import { InvalidClient, RequestRefused, ServiceUnavailable, SignInExpired } from './errors.js';
import { type ClientAuth, exchange, isTemporary, type OnRetry, patiently, postForm, refusal, retryAfterMs } from './http.js';
import { readTokenResponse, type TokenResponse } from './tokens.js';

export interface HelperSignInOptions {
  /** Receive the code at http://host:port/callback (a redirect pattern of the client must allow it) instead of polling for it. */
  redirect?: { port?: number; host?: string };
  /** Space-separated scopes to ask for at the code exchange. */
  scope?: string;
  /** Shows the user where to sign in (on a screen, as a QR code…). */
  onAddress(url: string): void;
}

/** The seed's `code_url` is polled this often; a link lives this long (the service's state lifetime). */
const POLL_INTERVAL_MS = 5_000;
const LINK_LIFETIME_MS = 10 * 60_000;
const CALL_BOUND_MS = 60_000;

/**
 * The helper flow (seed 000) with PKCE: checks the client's credentials first (so a wrong secret
 * shows before the user signs in), asks for the sign-in address, waits for the code (by redirect
 * or by polling) and exchanges it. Returns the token answer and where it came from.
 */
export async function signInWithHelper(api: string, client: ClientAuth, options: HelperSignInOptions, onRetry?: OnRetry): Promise<{ response: TokenResponse; tokenUrl: string }> {
  await checkCredentials(api, client, onRetry);
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const callback = options.redirect ? await listenForCallback(options.redirect.host ?? '127.0.0.1', options.redirect.port ?? 0) : undefined;
  try {
    const configUrl = new URL(`/external/oauth2helper/config/${encodeURIComponent(client.clientId)}`, api);
    configUrl.searchParams.set('code_challenge', challenge);
    configUrl.searchParams.set('code_challenge_method', 'S256');
    if (callback) configUrl.searchParams.set('redirect_url', callback.url);
    const answer = await patiently(() => exchange(configUrl, { method: 'POST' }), Date.now() + CALL_BOUND_MS, 'the sign-in address', onRetry);
    if (answer.status === 404) throw new InvalidClient('the service knows no such client (or it is disabled)');
    const config = answer.body as { authorize_url?: string; code_url?: string; accesstoken_request_url?: string } | undefined;
    if (answer.status !== 200 || !config?.authorize_url || !config.code_url || !config.accesstoken_request_url) throw refusal(answer, 'the sign-in address');

    const deadline = Date.now() + LINK_LIFETIME_MS;
    options.onAddress(config.authorize_url);
    const code = callback ? await Promise.race([callback.code, expiry(deadline)]) : await pollForCode(config.code_url, deadline, onRetry);
    const fields = { grant_type: 'authorization_code', code, code_verifier: verifier, ...(options.scope !== undefined && { scope: options.scope }) };
    // A code lives a minute: exchanged at once, and not retried for long.
    const exchanged = await patiently(() => postForm(config.accesstoken_request_url!, fields, client), Date.now() + 30_000, 'the code exchange', onRetry);
    const response = exchanged.status === 200 ? readTokenResponse(exchanged.body) : undefined;
    if (!response) {
      if (exchanged.body?.error === 'invalid_grant') throw new SignInExpired('the sign-in code expired or was already used');
      throw refusal(exchanged, 'the code exchange');
    }
    return { response, tokenUrl: config.accesstoken_request_url };
  } finally {
    callback?.close();
  }
}

/**
 * A wrong client secret would otherwise show only after the user signed in. Introspecting a
 * token that is not one costs nothing and answers 401 for wrong credentials (a public client has
 * none to check).
 */
async function checkCredentials(api: string, client: ClientAuth, onRetry?: OnRetry): Promise<void> {
  if (client.clientSecret === undefined) return;
  const answer = await patiently(() => postForm(new URL('/sso/introspect', api), { token: 'credentials-check' }, client), Date.now() + CALL_BOUND_MS, 'the credentials check', onRetry);
  if (answer.status !== 200) throw refusal(answer, 'the credentials check');
}

/** 404 until the user signed in, 200 with the code once, 429 when too fast; a network error or a restart of the service is waited out while the link lives. */
async function pollForCode(codeUrl: string, deadline: number, onRetry?: OnRetry): Promise<string> {
  for (;;) {
    await sleep(POLL_INTERVAL_MS);
    if (Date.now() > deadline) throw new SignInExpired();
    let answer;
    try {
      answer = await exchange(codeUrl);
    } catch (error) {
      if (!(error instanceof ServiceUnavailable)) throw error;
      onRetry?.({ problem: `polling for the code: ${error.message}`, inMs: POLL_INTERVAL_MS });
      continue;
    }
    if (answer.status === 200 && typeof answer.body?.code === 'string') return answer.body.code;
    if (answer.status === 404) continue;
    if (isTemporary(answer.status)) {
      await sleep(Math.max(retryAfterMs(answer.headers, 0) - POLL_INTERVAL_MS, 0));
      continue;
    }
    if (answer.status === 400) throw new SignInExpired('the sign-in link expired');
    throw new RequestRefused(answer.status, undefined, undefined, 'polling for the code');
  }
}

async function expiry(deadline: number): Promise<never> {
  await sleep(deadline - Date.now(), undefined, { ref: false });
  throw new SignInExpired();
}
