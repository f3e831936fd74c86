import { RequestRefused } from './errors.js';
import { type OnRetry, patiently, postForm, refusal } from './http.js';
import type { Store } from './stores.js';
import { type HeldTokens, hold, isFresh, readTokenResponse, type TokenSource } from './tokens.js';

export interface ClientCredentialsOptions {
  /** The service's address, e.g. https://voyage.example. */
  api: string;
  clientId: string;
  clientSecret: string;
  /** Space-separated; the service's default (notification:subscribe) when absent. */
  scope?: string;
  /** Keeps the token across restarts (key `client`). */
  store?: Store;
  /** Told of each failure a request waits out (the service restarting, the network away). */
  onRetry?: OnRetry;
}

/** How long one token request keeps trying through a restart of the service. */
const ASKING_BOUND_MS = 60_000;
const STORE_KEY = 'client';

/** The client's own tokens (`client_credentials` at /public/api/oauth2/token). */
export class ClientCredentials implements TokenSource {
  private held: HeldTokens | undefined;
  private asking: Promise<string> | undefined;

  constructor(private readonly options: ClientCredentialsOptions) {}

  async accessToken(): Promise<string> {
    if (!this.held && this.options.store) {
      const stored = await this.options.store.get<HeldTokens>(STORE_KEY);
      if (stored?.token_url === this.tokenUrl) this.held = stored;
    }
    if (this.held && isFresh(this.held)) return this.held.access_token;
    return this.renew();
  }

  /** One request at a time: callers meanwhile share its answer. */
  renew(): Promise<string> {
    this.asking ??= this.ask().finally(() => (this.asking = undefined));
    return this.asking;
  }

  private get tokenUrl(): string {
    return new URL('/public/api/oauth2/token', this.options.api).href;
  }

  private async ask(): Promise<string> {
    const { clientId, clientSecret, scope, store } = this.options;
    const fields = { grant_type: 'client_credentials', ...(scope !== undefined && { scope }) };
    const answer = await patiently(() => postForm(this.tokenUrl, fields, { clientId, clientSecret }), Date.now() + ASKING_BOUND_MS, 'the client token request', this.options.onRetry);
    const response = answer.status === 200 ? readTokenResponse(answer.body) : undefined;
    if (!response) throw answer.status === 200 ? new RequestRefused(200, undefined, 'not a token response', 'the client token request') : refusal(answer, 'the client token request');
    this.held = hold(response, this.tokenUrl);
    await store?.set(STORE_KEY, this.held);
    return response.access_token;
  }
}
