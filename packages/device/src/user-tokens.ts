import { signInWithDeviceCode, type DeviceCodeSignInOptions } from './device-code.js';
import { ServiceUnavailable, SignInRequired } from './errors.js';
import { signInWithHelper, type HelperSignInOptions } from './helper-sign-in.js';
import { type OnRetry, patiently, postForm, refusal } from './http.js';
import { MemoryStore, type Store } from './stores.js';
import { type HeldTokens, hold, isFresh, readTokenResponse, type TokenResponse, type TokenSource } from './tokens.js';

export interface UserTokensOptions {
  /** The service's address, e.g. https://voyage.example. */
  api: string;
  clientId: string;
  /** Absent for a public client. */
  clientSecret?: string;
  /** Keeps the user's tokens across restarts (key `user`); in memory by default. */
  store?: Store;
  /** Told of each failure a sign-in or a refresh waits out (the service restarting, the network away). */
  onRetry?: OnRetry;
}

const STORE_KEY = 'user';
/** How long one refresh keeps trying through a restart of the service. */
const REFRESH_BOUND_MS = 60_000;
/** A sign-out does not wait long for the service: the tokens are forgotten either way. */
const SIGN_OUT_WAIT_MS = 5_000;

/**
 * A user's tokens on this device: signs the user in, then hands out access tokens, refreshing
 * them before they expire.
 *
 * Refresh tokens rotate: each refresh retires the one it used, and presenting a retired one again
 * signs the user out everywhere on this client. So there is one refresh at a time (concurrent
 * callers share it), and `refresh()` saves the rotated pair in the store before it returns: no
 * caller, and no stream, gets a new access token whose refresh token is not yet on disk, and the
 * FileStore's rename leaves either the old pair or the new one. A process killed after the save
 * resumes with the new pair; one killed in the instant between the answer and the save's rename
 * holds a retired refresh token, and its next refresh reports SignInRequired instead of looping.
 */
export class UserTokens implements TokenSource {
  private readonly store: Store;
  /** undefined: not read yet; null: none stored. */
  private held: HeldTokens | null | undefined;
  private refreshing: Promise<string> | undefined;

  constructor(private readonly options: UserTokensOptions) {
    this.store = options.store ?? new MemoryStore();
  }

  /** The seed's helper flow: the user signs in at the address `onAddress` is given. */
  async signInWithHelper(options: HelperSignInOptions): Promise<TokenResponse> {
    const { response, tokenUrl } = await signInWithHelper(this.options.api, this.client, options, this.options.onRetry);
    await this.keep(hold(response, tokenUrl));
    return response;
  }

  /** RFC 8628: the user enters the code `onCode` is given on another device. */
  async signInWithDeviceCode(options: DeviceCodeSignInOptions): Promise<TokenResponse> {
    const { response, tokenUrl } = await signInWithDeviceCode(this.options.api, this.client, options, this.options.onRetry);
    await this.keep(hold(response, tokenUrl));
    return response;
  }

  /** Whether a user's tokens are stored (they may still have been revoked since). */
  async signedIn(): Promise<boolean> {
    return (await this.load()) !== null;
  }

  /** Signs the user out of this device: the grant is revoked at the service (if it answers within a few seconds), and the tokens are forgotten. */
  async signOut(): Promise<void> {
    const held = await this.load();
    if (held?.refresh_token !== undefined) {
      // RFC 7009: revoking the refresh token ends the grant, its access tokens with it.
      await postForm(new URL('/sso/revoke', this.options.api), { token: held.refresh_token, token_type_hint: 'refresh_token' }, this.client, SIGN_OUT_WAIT_MS).catch(() => {});
    }
    await this.keep(null);
  }

  async accessToken(): Promise<string> {
    const held = await this.load();
    if (held && isFresh(held)) return held.access_token;
    return this.renew();
  }

  /** One refresh at a time: callers meanwhile share its answer. */
  renew(): Promise<string> {
    this.refreshing ??= this.refresh().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private get client() {
    return { clientId: this.options.clientId, ...(this.options.clientSecret !== undefined && { clientSecret: this.options.clientSecret }) };
  }

  private async refresh(): Promise<string> {
    const held = await this.load();
    if (!held) throw new SignInRequired('no user is signed in on this device');
    if (held.refresh_token === undefined) throw new SignInRequired('the access token expired and the sign-in gave no refresh token');
    const fields = { grant_type: 'refresh_token', refresh_token: held.refresh_token };
    let answer;
    try {
      answer = await patiently(() => postForm(held.token_url, fields, this.client), Date.now() + REFRESH_BOUND_MS, 'the refresh', this.options.onRetry);
    } catch (error) {
      // Refreshed early: while the service is away, the token held still works for a while.
      if (error instanceof ServiceUnavailable && held.expires_at > Date.now()) return held.access_token;
      throw error;
    }
    const response = answer.status === 200 ? readTokenResponse(answer.body) : undefined;
    if (response) {
      const tokens = hold({ ...response, refresh_token: response.refresh_token ?? held.refresh_token }, held.token_url);
      await this.keep(tokens);
      return tokens.access_token;
    }
    if (answer.body?.error === 'invalid_grant') {
      await this.keep(null);
      throw new SignInRequired('the sign-in ended: the service refused the refresh token (revoked, expired or signed out)');
    }
    throw refusal(answer, 'the refresh');
  }

  private async load(): Promise<HeldTokens | null> {
    this.held ??= (await this.store.get<HeldTokens>(STORE_KEY)) ?? null;
    return this.held;
  }

  private async keep(tokens: HeldTokens | null): Promise<void> {
    await this.store.set(STORE_KEY, tokens ?? undefined);
    this.held = tokens;
  }
}
