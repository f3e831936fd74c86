import { setTimeout as sleep } from 'node:timers/promises';
import { AccessDenied, SignInExpired } from './errors.js';
import { type ClientAuth, type OnRetry, patiently, postForm, refusal } from './http.js';
import { readTokenResponse, type TokenResponse } from './tokens.js';

/** What the user needs to approve the device (RFC 8628 §3.2), camel-cased. */
export interface DeviceCode {
  userCode: string;
  verificationUri: string;
  verificationUriComplete?: string;
  /** Seconds. */
  expiresIn: number;
}

export interface DeviceCodeSignInOptions {
  scope?: string;
  /** Shows the user the code and where to enter it. */
  onCode(code: DeviceCode): void;
}

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 §3.5: 5 s when the service names no interval, and 5 s more after each slow_down. */
const DEFAULT_INTERVAL_S = 5;
const SLOW_DOWN_STEP_S = 5;
const CALL_BOUND_MS = 60_000;

/** RFC 8628: the user approves on another device; this one shows the code and polls. */
export async function signInWithDeviceCode(api: string, client: ClientAuth, options: DeviceCodeSignInOptions, onRetry?: OnRetry): Promise<{ response: TokenResponse; tokenUrl: string }> {
  const fields: Record<string, string> = options.scope !== undefined ? { scope: options.scope } : {};
  const answer = await patiently(() => postForm(new URL('/sso/device_authorization', api), fields, client), Date.now() + CALL_BOUND_MS, 'the device authorization', onRetry);
  const body = answer.body as { device_code?: string; user_code?: string; verification_uri?: string; verification_uri_complete?: string; expires_in?: number; interval?: number } | undefined;
  if (answer.status !== 200 || !body?.device_code || !body.user_code || !body.verification_uri || typeof body.expires_in !== 'number') throw refusal(answer, 'the device authorization');
  options.onCode({
    userCode: body.user_code,
    verificationUri: body.verification_uri,
    ...(body.verification_uri_complete !== undefined && { verificationUriComplete: body.verification_uri_complete }),
    expiresIn: body.expires_in,
  });

  const tokenUrl = new URL('/sso/token', api).href;
  const deadline = Date.now() + body.expires_in * 1000;
  let interval = body.interval ?? DEFAULT_INTERVAL_S;
  for (;;) {
    await sleep(interval * 1000);
    if (Date.now() > deadline) throw new SignInExpired('the device code expired before the user approved it');
    // A restart of the service while the user approves is waited out, within the code's life.
    const poll = await patiently(() => postForm(tokenUrl, { grant_type: GRANT, device_code: body.device_code! }, client), deadline, 'polling for the approval', onRetry);
    const response = poll.status === 200 ? readTokenResponse(poll.body) : undefined;
    if (response) return { response, tokenUrl };
    switch (poll.body?.error) {
      case 'authorization_pending':
        continue;
      case 'slow_down':
        interval += SLOW_DOWN_STEP_S;
        continue;
      case 'access_denied':
        throw new AccessDenied();
      case 'expired_token':
        throw new SignInExpired('the device code expired before the user approved it');
      default:
        throw refusal(poll, 'polling for the approval');
    }
  }
}
