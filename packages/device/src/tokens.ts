/** What hands out access tokens: a client's own (ClientCredentials) or a user's (UserTokens). */
export interface TokenSource {
  /** A token with time left: the one held, or a new one. */
  accessToken(): Promise<string>;
  /** A new token, whatever the one held (after the service refused it). */
  renew(): Promise<string>;
}

/** A token endpoint's answer (RFC 6749 §5.1), as the service sends it. */
export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in: number;
  refresh_token?: string;
  /** `null` in the helper's grants when none was asked; absent in others without a scope. */
  scope?: string | null;
}

/** Tokens as a store keeps them: when the access token expires instead of how long it lasted. */
export interface HeldTokens {
  access_token: string;
  refresh_token?: string;
  scope?: string | null;
  /** Milliseconds since the epoch. */
  expires_at: number;
  /** The access token's lifetime in seconds, as it was given. */
  expires_in: number;
  /** Where they are refreshed (the helper names its own). */
  token_url: string;
}

/** A token is renewed when this much of its life is left (or half of it, for short-lived ones). */
const RENEW_MARGIN_MS = 60_000;

export function hold(response: TokenResponse, tokenUrl: string, now = Date.now()): HeldTokens {
  return {
    access_token: response.access_token,
    ...(response.refresh_token !== undefined && { refresh_token: response.refresh_token }),
    ...(response.scope !== undefined && { scope: response.scope }),
    expires_at: now + response.expires_in * 1000,
    expires_in: response.expires_in,
    token_url: tokenUrl,
  };
}

/** Whether `tokens` still has more than the renewal margin left. */
export function isFresh(tokens: HeldTokens, now = Date.now()): boolean {
  return tokens.expires_at - Math.min(RENEW_MARGIN_MS, (tokens.expires_in * 1000) / 2) > now;
}

/** A token answer the service could have sent, or undefined. */
export function readTokenResponse(body: Record<string, unknown> | undefined): TokenResponse | undefined {
  if (typeof body?.access_token !== 'string' || typeof body.expires_in !== 'number') return undefined;
  return body as unknown as TokenResponse;
}
