import { randomUUID } from 'node:crypto';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { DEVICE_GRANT, type DeviceAuthorization, pollDeviceToken, startDeviceAuthorization, VerificationPage, verifyDevice } from '../../factories/device-flow.factory.js';
import { clientToken, PUBLISH_SCOPE, publish, validNotification } from '../../factories/notification.factory.js';
import { createClient, createPublicClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
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
import { FormBrowser } from '../../setup/form-browser.js';
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
    /** The device grant (RFC 8628) + refresh_token, allowed the scopes DEVICE_SCOPES. */
    readonly device: TestClient,
    /** The device grant only, no scopes: its device codes are foreign to `device`. */
    readonly otherDevice: TestClient,
    /** A helper client allowed the OpenID Connect scopes: its users' tokens open userinfo. */
    readonly oidc: TestClient,
    /** A public client (no secret, PKCE required) with the helper's grants and pattern. */
    readonly publicClient: { id: string },
  ) {}

  static async start(vars: Record<string, string> = {}): Promise<World> {
    // The longest device code lifetime: housekeeping deletes expired device codes, and a purge
    // landing between the row counts of a long run would read as a request that deleted rows.
    const app = await startTestApp({ DEVICE_CODE_TTL: '1800', ...vars });
    const helperOptions = { grants: ['authorization_code' as const, 'refresh_token' as const], redirectPatterns: [LOOPBACK_PATTERN] };
    const helper = await createClient(app, helperOptions);
    const other = await createClient(app, helperOptions);
    const subscriber = await createClient(app, { grants: ['client_credentials'] });
    const publisher = await createClient(app, { grants: ['client_credentials'], scopes: [PUBLISH_SCOPE] });
    const disabled = await createClient(app, helperOptions);
    await app.get(ClientsService).setEnabled(disabled.id, false);
    const user = await createUser(app);
    const device = await createClient(app, { grants: [DEVICE_GRANT, 'refresh_token'], scopes: [...DEVICE_SCOPES] });
    const otherDevice = await createClient(app, { grants: [DEVICE_GRANT] });
    const oidc = await createClient(app, { ...helperOptions, scopes: [...OIDC_SCOPES] });
    const publicClient = await createPublicClient(app, helperOptions);
    return new World(app, helper, other, subscriber, publisher, disabled, user, device, otherDevice, oidc, publicClient);
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
    return (await this.fillWithValues(value)).filled;
  }

  /** As fill, with the value each placeholder (and each `$`-named value behind it) got, for checks after the answer. */
  async fillWithValues<T>(value: T): Promise<{ filled: T; values: Map<string, string> }> {
    const names = new Set<string>();
    collect(value, names);
    const fresh = new Map<string, string>();
    for (const name of names) fresh.set(name, await this.resolve(name, fresh));
    return { filled: substitute(value, fresh), values: fresh };
  }

  /**
   * A browser session of the world's user (the cookie's value), begun by a standard authorization
   * request of the logout client, and the ID token that client got from it.
   */
  async signedInBrowser(): Promise<{ session: string; idToken: string }> {
    const clientId = await this.logoutClientId();
    const browser = new FormBrowser();
    const url = `${this.app.baseUrl}/sso/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: LOOPBACK_REDIRECT, scope: 'openid', code_challenge: this.pkce.challenge, code_challenge_method: 'S256' })}`;
    await this.resetLoginThrottle();
    const login = await browser.submit(await browser.get(url), this.app.baseUrl, { ...this.user });
    const code = login.status === 302 ? new URL(login.headers.get('location')!).searchParams.get('code') : null;
    if (!code) throw new Error(`the standard sign-in answered ${login.status}`);
    const tokens = await exchangeCode(this.app, { id: clientId, secret: this.cache.get('logout_client_secret')! }, code, { code_verifier: this.pkce.verifier, redirect_uri: LOOPBACK_REDIRECT });
    if (tokens.status !== 200) throw new Error(`the standard code exchange answered ${tokens.status}: ${tokens.text}`);
    return { session: browser.cookie('vc_session')!, idToken: String(tokens.body.id_token) };
  }

  /** A client with a registered post_logout_redirect_uri (LOGOUT_REDIRECT), created on first use. */
  private async logoutClientId(): Promise<string> {
    if (!this.cache.has('logout_client_id')) {
      const created = await this.app.get(ClientsService).create({ name: `logout-${randomUUID()}`, redirectPatterns: [LOOPBACK_PATTERN], postLogoutRedirectUris: [LOGOUT_REDIRECT] });
      this.cache.set('logout_client_secret', created.client_secret!);
      this.cache.set('logout_client_id', created.client_id);
    }
    return this.cache.get('logout_client_id')!;
  }

  private async resolve(name: string, fresh: Map<string, string>): Promise<string> {
    const { app, helper, other, subscriber, publisher, user, device } = this;
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
    /** This request's device authorization (pending, of `device`): its device code, user code and approval value go together. */
    const deviceAuthorization = async (): Promise<DeviceAuthorization> => {
      if (!fresh.has('$device')) fresh.set('$device', JSON.stringify(await startDeviceAuthorization(app, device)));
      return JSON.parse(fresh.get('$device')!) as DeviceAuthorization;
    };
    /** A device authorization of its own, taken through the verification page to the user's decision. */
    const decided = async (decision: 'approve' | 'deny'): Promise<DeviceAuthorization> => {
      const authorization = await startDeviceAuthorization(app, device);
      await this.resetLoginThrottle();
      const page = await verifyDevice(app, authorization.user_code, user, decision);
      if (page.status !== 200) throw new Error(`the ${decision} step answered ${page.status}: ${page.error}`);
      return authorization;
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
      case 'public_client_id':
        return this.publicClient.id;
      case 'public_code':
        // The public client's code, bound to this world's PKCE challenge ({{code_verifier}} redeems it).
        await this.resetLoginThrottle();
        return authorizationCode(app, { id: this.publicClient.id, secret: '' }, user, { codeChallenge: this.pkce.challenge });
      case 'device_client_id':
        return device.id;
      case 'device_client_secret':
        return device.secret;
      case 'device_basic':
        return basicAuth(device.id, device.secret);
      case 'other_device_client_id':
        return this.otherDevice.id;
      case 'other_device_client_secret':
        return this.otherDevice.secret;
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
      // A user's token for userinfo (scope openid profile email), one without openid, and a forged one.
      case 'openid_token':
        return once('openid_token', async () => {
          await this.resetLoginThrottle();
          return (await issueTokens(app, this.oidc, user, { redirectUrl: LOOPBACK_REDIRECT, scope: OIDC_SCOPES.join(' ') })).access_token;
        });
      case 'profile_token':
        return once('profile_token', async () => {
          await this.resetLoginThrottle();
          return (await issueTokens(app, this.oidc, user, { redirectUrl: LOOPBACK_REDIRECT, scope: 'profile email' })).access_token;
        });
      case 'forged_openid_token':
        return flipSignatureByte(await this.resolve('openid_token', fresh));
      case 'publish_token':
        return once('publish_token', () => clientToken(app, publisher, PUBLISH_SCOPE));
      case 'subscribe_token':
        return once('subscribe_token', () => clientToken(app, subscriber));
      case 'forged_publish_token':
        return flipSignatureByte(await this.resolve('publish_token', fresh));
      case 'forged_subscribe_token':
        return flipSignatureByte(await this.resolve('subscribe_token', fresh));
      // The device flow (RFC 8628). One pending authorization per request, fresh each time:
      // `device_code`, `user_code` (XXXX-XXXX, and as a user might type it) and `approval` name it.
      case 'device_code':
        return (await deviceAuthorization()).device_code;
      case 'user_code':
        return (await deviceAuthorization()).user_code;
      case 'user_code_lower':
        return (await deviceAuthorization()).user_code.toLowerCase();
      case 'user_code_bare':
        return (await deviceAuthorization()).user_code.replace('-', '');
      case 'user_code_spaced':
        return ` ${(await deviceAuthorization()).user_code.replace('-', ' ')} `;
      case 'user_code_dashes':
        return (await deviceAuthorization()).user_code.replace('-', '').replace(/(..)(?!$)/g, '$1-');
      case 'user_code_odd_dash':
        // A non-breaking hyphen and spaces, as a phone's keyboard might put them.
        return `\u00a0${(await deviceAuthorization()).user_code.replace('-', '\u2011')}\u00a0`;
      case 'approval': {
        // The one-time value of the approval page: the user signed in on the verification page for this request's code.
        const { user_code } = await deviceAuthorization();
        await this.resetLoginThrottle();
        const page = await VerificationPage.open(app);
        await page.submit({ user_code });
        await page.submit({ username: user.username, password: user.password });
        const approval = page.hidden.approval;
        if (page.status !== 200 || !approval) throw new Error(`the sign-in step answered ${page.status} without an approval form: ${page.error}`);
        return approval;
      }
      case 'polled_device_code': {
        // Polled a moment ago: polling it again now is too fast (slow_down).
        const { device_code } = await startDeviceAuthorization(app, device);
        const polled = await pollDeviceToken(app, device, device_code);
        if (polled.status !== 400) throw new Error(`the first poll answered ${polled.status}: ${polled.text}`);
        return device_code;
      }
      case 'approved_device_code':
        return (await decided('approve')).device_code;
      case 'denied_device_code':
        return (await decided('deny')).device_code;
      case 'decided_user_code':
        return (await decided('deny')).user_code;
      case 'foreign_device_code':
        return (await startDeviceAuthorization(app, this.otherDevice)).device_code;
      case 'used_device_code':
        return once('used_device_code', async () => {
          const { device_code } = await decided('approve');
          const exchanged = await pollDeviceToken(app, device, device_code);
          if (exchanged.status !== 200) throw new Error(`the device code exchange answered ${exchanged.status}: ${exchanged.text}`);
          return device_code;
        });
      // The standard authorization request and logout: a browser session of the world's user and
      // the ID token of that sign-in (fresh for each request: a logout may end it), the logout
      // client, and ID tokens the session's user did not get (another user's, a forged one).
      case 'session':
      case 'id_token': {
        if (!fresh.has('$signin')) fresh.set('$signin', JSON.stringify(await this.signedInBrowser()));
        const signedIn = JSON.parse(fresh.get('$signin')!) as { session: string; idToken: string };
        return name === 'session' ? signedIn.session : signedIn.idToken;
      }
      case 'logout_client_id':
        return this.logoutClientId();
      case 'logout_redirect':
        return LOGOUT_REDIRECT;
      case 'other_user_id_token':
        return once('other_user_id_token', async () => {
          const clientId = await this.logoutClientId();
          const other = await createUser(app);
          const url = `${app.baseUrl}/sso/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: LOOPBACK_REDIRECT, scope: 'openid', code_challenge: this.pkce.challenge, code_challenge_method: 'S256' })}`;
          const code = new URL((await signIn(url, other)).headers.get('location')!).searchParams.get('code')!;
          const tokens = await exchangeCode(app, { id: clientId, secret: this.cache.get('logout_client_secret')! }, code, { code_verifier: this.pkce.verifier, redirect_uri: LOOPBACK_REDIRECT });
          return String(tokens.body.id_token);
        });
      case 'forged_id_token':
        return flipSignatureByte(await this.resolve('other_user_id_token', fresh));
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

/** What the device client may ask for. */
export const DEVICE_SCOPES = ['voyages:read', 'reports:read'] as const;

/** Where the logout client's users may be sent after signing out (its registered post_logout_redirect_uri). */
export const LOGOUT_REDIRECT = 'http://127.0.0.1:8765/signed-out';

/** What the OpenID Connect client may ask for. */
export const OIDC_SCOPES = ['openid', 'profile', 'email'] as const;

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
