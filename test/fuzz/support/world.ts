import { randomUUID } from 'node:crypto';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { clientToken, PUBLISH_SCOPE, publish, validNotification } from '../../factories/notification.factory.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { flipSignatureByte, issueState } from '../../factories/state.factory.js';
import { openStream } from '../../factories/stream.factory.js';
import {
  authorizationCode,
  basicAuth,
  exchangeCode,
  issueTokens,
  LOOPBACK_PATTERN,
  LOOPBACK_REDIRECT,
  pkcePair,
  type PortalUser,
  refresh,
  type TokenResponse,
} from '../../factories/token-flow.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

/**
 * The service under fuzz with real credentials to mix into the generated requests, so they get
 * past the first check. Generators write placeholders such as `{{client_id}}` or `{{state}}`;
 * they are resolved when the request is sent (a fresh state, code or token each time where the
 * real thing is single use), so a counterexample reads as what it is.
 */
export class World {
  private cache = new Map<string, string>();
  private readonly pkce = pkcePair();

  private constructor(
    readonly app: TestApp,
    /** authorization_code + refresh_token, loopback redirect pattern. */
    readonly helper: TestClient,
    /** A second helper client: its states and tokens are foreign to `helper`. */
    readonly other: TestClient,
    /** client_credentials with the default (subscribe) scope: the stream's client. */
    readonly subscriber: TestClient,
    /** client_credentials allowed to publish. */
    readonly publisher: TestClient,
    readonly disabled: TestClient,
    readonly user: PortalUser,
  ) {}

  static async start(vars: Record<string, string> = {}): Promise<World> {
    const app = await startTestApp(vars);
    const helperOptions = { grants: ['authorization_code' as const, 'refresh_token' as const], redirectPatterns: [LOOPBACK_PATTERN] };
    const helper = await createClient(app, helperOptions);
    const other = await createClient(app, helperOptions);
    const subscriber = await createClient(app, { grants: ['client_credentials'] });
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    const disabled = await createClient(app, helperOptions);
    await app.get(ClientsService).setEnabled(disabled.id, false);
    const user = await createUser(app);
    return new World(app, helper, other, subscriber, publisher, disabled, user);
  }

  get port(): number {
    return Number(new URL(this.app.baseUrl).port);
  }

  get host(): string {
    return new URL(this.app.baseUrl).host;
  }

  /** Failed logins are throttled per username and per address (all of ours come from 127.0.0.1): start each attempt unthrottled. */
  resetLoginThrottle(): Promise<unknown> {
    return query(this.app.databaseUrl, 'DELETE FROM login_failures');
  }

  /** Every `{{name}}` in the strings of `value` replaced; `fresh` holds this request's single-use values. */
  async fill<T>(value: T): Promise<T> {
    const names = new Set<string>();
    collect(value, names);
    const fresh = new Map<string, string>();
    for (const name of names) fresh.set(name, await this.resolve(name, fresh));
    return substitute(value, fresh);
  }

  private async resolve(name: string, fresh: Map<string, string>): Promise<string> {
    const { app, helper, other, subscriber, publisher, user } = this;
    const once = async (key: string, make: () => Promise<string>) => {
      if (!this.cache.has(key)) this.cache.set(key, await make());
      return this.cache.get(key)!;
    };
    const tokens = async (): Promise<TokenResponse> => {
      if (!fresh.has('$tokens')) {
        await this.resetLoginThrottle();
        fresh.set('$tokens', JSON.stringify(await issueTokens(app, helper, user)));
      }
      return JSON.parse(fresh.get('$tokens')!) as TokenResponse;
    };
    switch (name) {
      case 'client_id':
        return helper.id;
      case 'client_secret':
        return helper.secret;
      case 'other_client_id':
        return other.id;
      case 'other_client_secret':
        return other.secret;
      case 'cc_client_id':
        return subscriber.id;
      case 'cc_client_secret':
        return subscriber.secret;
      case 'publisher_id':
        return publisher.id;
      case 'publisher_secret':
        return publisher.secret;
      case 'disabled_client_id':
        return this.disabled.id;
      case 'basic':
        return basicAuth(helper.id, helper.secret);
      case 'cc_basic':
        return basicAuth(subscriber.id, subscriber.secret);
      case 'publisher_basic':
        return basicAuth(publisher.id, publisher.secret);
      case 'username':
        return user.username;
      case 'username_upper':
        return user.username.toUpperCase();
      case 'password':
        return user.password;
      case 'redirect_url':
        return LOOPBACK_REDIRECT;
      case 'code_challenge':
        return this.pkce.challenge;
      case 'code_verifier':
        return this.pkce.verifier;
      case 'api_url':
        return app.baseUrl;
      case 'state':
        return (await issueState(app, helper.id)).state;
      case 'redirect_state':
        return (await issueState(app, helper.id, { redirect_url: LOOPBACK_REDIRECT })).state;
      case 'pkce_state':
        return (await issueState(app, helper.id, { code_challenge: this.pkce.challenge, code_challenge_method: 'S256' })).state;
      case 'foreign_state':
        return (await issueState(app, other.id)).state;
      case 'forged_state':
        return flipSignatureByte((await issueState(app, helper.id)).state);
      case 'used_state':
        return once('used_state', async () => {
          const { authorize_url, state } = await issueState(app, helper.id);
          await this.resetLoginThrottle();
          await (await signIn(authorize_url, user)).text();
          return state;
        });
      case 'code':
        await this.resetLoginThrottle();
        return authorizationCode(app, helper, user);
      case 'access_token':
        return (await tokens()).access_token;
      case 'refresh_token':
        return (await tokens()).refresh_token;
      case 'publish_token':
        return once('publish_token', () => clientToken(app, publisher, PUBLISH_SCOPE));
      case 'subscribe_token':
        return once('subscribe_token', () => clientToken(app, subscriber));
      case 'forged_publish_token':
        return flipSignatureByte(await this.resolve('publish_token', fresh));
      case 'forged_subscribe_token':
        return flipSignatureByte(await this.resolve('subscribe_token', fresh));
      case 'recipient':
        return subscriber.id;
      case 'uuid':
        return randomUUID();
      default:
        throw new Error(`unknown placeholder {{${name}}}`);
    }
  }

  /**
   * The normal flows, end to end, after the fuzzing: helper config → login → code → token →
   * refresh; client_credentials → stream open → publish → message received.
   */
  async normalFlowStillWorks(): Promise<void> {
    const { app, helper, user } = this;
    await this.resetLoginThrottle();
    const code = await authorizationCode(app, helper, user);
    const exchanged = await exchangeCode(app, helper, code);
    if (exchanged.status !== 200) throw new Error(`code exchange answered ${exchanged.status}: ${exchanged.text}`);
    const refreshed = await refresh(app, helper, (exchanged.body as unknown as TokenResponse).refresh_token);
    if (refreshed.status !== 200) throw new Error(`refresh answered ${refreshed.status}: ${refreshed.text}`);

    // A recipient of its own, so nothing the fuzzing published is replayed first.
    const recipient = await createClient(app, { grants: ['client_credentials'] });
    const stream = await openStream(app.baseUrl, await clientToken(app, recipient));
    try {
      const body = validNotification(recipient.id);
      const published = await publish(app, await clientToken(app, this.publisher, PUBLISH_SCOPE), body);
      if (published.status !== 202) throw new Error(`publish answered ${published.status}: ${published.text}`);
      const [message] = await stream.received(1);
      if (message.correlationId !== body.correlationId) throw new Error(`the stream pushed ${JSON.stringify(message)}`);
    } finally {
      await stream.close();
    }
  }
}

const PLACEHOLDER = /\{\{(\w+)\}\}/g;

function collect(value: unknown, names: Set<string>): void {
  if (typeof value === 'string') for (const match of value.matchAll(PLACEHOLDER)) names.add(match[1]);
  else if (Array.isArray(value)) for (const item of value) collect(item, names);
  else if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)) for (const item of Object.values(value)) collect(item, names);
}

function substitute<T>(value: T, fresh: Map<string, string>): T {
  if (typeof value === 'string') return value.replace(PLACEHOLDER, (_, name: string) => fresh.get(name)!) as T;
  if (Array.isArray(value)) return value.map((item) => substitute(item, fresh)) as T;
  if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    // Own keys only, including "__proto__" as a plain key (fc.object and fc.json generate it).
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) Object.defineProperty(copy, key, { value: substitute(item, fresh), enumerable: true, writable: true, configurable: true });
    return copy as T;
  }
  return value;
}
