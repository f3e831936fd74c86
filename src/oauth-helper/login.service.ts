import { Injectable } from '@nestjs/common';
import type * as oidc from 'openid-client';
import type { IdentityProviderEntity } from '../identity-providers/identity-provider.entity.js';
import type { ClientEntity } from '../clients/client.entity.js';
import { ClientsService } from '../clients/clients.service.js';
import { isRedirectAllowed } from '../clients/redirect-pattern.js';
import { csrfMatches, csrfRefusal, type HtmlPage } from '../common/html/html-reply.js';
import type { Requester } from '../common/http/requester.js';
import { messagePage } from '../common/html/page-layout.js';
import { type SignInChoice, SignInMethods, onlyProvider } from '../identity-providers/sign-in-methods.service.js';
import { NOT_OFFERED, providersOnly, providerUnavailable } from '../identity-providers/sign-in-messages.js';
import { UpstreamFailure } from '../identity-providers/upstream-failure.js';
import { UpstreamSignIn } from '../identity-providers/upstream-sign-in.service.js';
import { RelayService } from '../identity-providers/relay.service.js';
import { SignInConfirmations } from '../identity-providers/sign-in-confirmations.js';
import { UsersService } from '../users/users.service.js';
import { displayNameOf, type UserEntity } from '../users/user.entity.js';
import { AuthorizationCodeIssuer } from '../token/authorization-code-issuer.js';
import { OAuthError } from '../token/oauth-error.js';
import { type OAuthParams, readOAuthParams } from '../token/oauth-params.js';
import { ApprovedStates } from './approved-states.js';
import { authorizationResponse, isStandardRequest, readAuthorizationRequest } from './authorization-request.js';
import { Env } from '../config/env.js';
import { formatScope } from '../token/scope.js';
import { confirmPage, continueAsPage, loginPage, signedInPage } from './login-page.js';
import { type BrowserSession, BrowserSessionsRepository } from '../sessions/browser-sessions.repository.js';
import { LoginAttempts, signInRefusal } from './login-attempts.service.js';
import { InvalidState, type StateClaims, StateTokens } from './state-tokens.service.js';

/** What /sso/authorize answers: an HTML page, or a redirect to the device's verified URL. */
export type AuthorizeOutcome = ({ kind: 'page' } & HtmlPage) | { kind: 'redirect'; location: string };

interface VerifiedRequest {
  client: ClientEntity;
  state: string;
  claims: StateClaims;
  methods: SignInChoice;
}

/** What the login page knows of the browser, and may set on it. */
export interface LoginBrowser {
  /** The binding of a sign-in at a provider, issued (as a cookie) on first use. */
  bind(): string;
  /** The binding it already has (a confirmation after a sign-in at a provider is its own). */
  binding: string | undefined;
  /** Its session cookie's value, if any. */
  session: string | undefined;
  /** Sets the session cookie: a sign-in here began a session. */
  startSession(secret: string): void;
}

/** A signed-in user as the approval needs them. */
type ApprovingUser = Pick<UserEntity, 'id' | 'username' | 'profile' | 'tokensValidAfter'>;

const errorPage = (message: string, title = 'This sign-in link does not work'): AuthorizeOutcome => ({
  kind: 'page',
  status: 400,
  html: messagePage(title, message),
});
const AGAIN = 'Start the sign-in again from your device.';
/** A stale tab or the browser's history: the user may already be done. */
const alreadyUsed = () => errorPage(`This link has already been used to sign in. If your device is not signed in, ${AGAIN.toLowerCase()}`, 'This sign-in link was already used');

/** The login page of the helper flow: checks the sign-in link, the user, and completes the authorization. */
@Injectable()
export class LoginService {
  constructor(
    private readonly clients: ClientsService,
    private readonly states: StateTokens,
    private readonly codes: AuthorizationCodeIssuer,
    private readonly approved: ApprovedStates,
    private readonly logins: LoginAttempts,
    private readonly methods: SignInMethods,
    private readonly upstream: UpstreamSignIn,
    private readonly confirmations: SignInConfirmations,
    private readonly relay: RelayService,
    private readonly users: UsersService,
    private readonly env: Env,
    private readonly sessions: BrowserSessionsRepository,
  ) {}

  async show(query: unknown, csrfToken: string, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    const request = isStandardRequest(query) ? await this.fromStandardRequest(query) : await this.verify(query);
    if ('kind' in request) return request;
    const session = await this.sessions.find(browser.session);
    const asked = request.claims.request;
    if (asked) {
      // OpenID Connect Core §3.1.2.1: prompt=login and an exceeded max_age ask for the sign-in again.
      const usable = session && !asked.prompt?.includes('login') && (asked.max_age === undefined || Date.now() - session.authTime.getTime() <= asked.max_age * 1000) ? session : undefined;
      if (asked.prompt?.includes('none')) return usable ? this.complete(request, usable.user, browser, usable) : this.refuse(request, 'login_required', 'no one is signed in here in this browser');
      // Single sign-on: a standard request is answered without a page, unless it asks for one.
      if (usable && !asked.prompt?.includes('consent')) return this.complete(request, usable.user, browser, usable);
      if (usable) return this.continueAs(request, usable, csrfToken);
    } else if (session) {
      // The helper's link (someone may have sent it) is never answered silently.
      return this.continueAs(request, session, csrfToken);
    }
    return this.signInStep(request, csrfToken, browser);
  }

  /** The sign-in itself: a client that signs in through one provider only has nothing to choose (straight there); else the form. */
  private signInStep(request: VerifiedRequest, csrfToken: string, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    const provider = onlyProvider(request.methods);
    return provider ? this.toProvider(request, provider.name, csrfToken, browser) : this.form(request, csrfToken, 200, undefined, request.claims.request?.login_hint);
  }

  /** "Continue as USER": the browser's session may answer this link, on the user's word; or another account signs in. */
  private async continueAs(request: VerifiedRequest, session: BrowserSession, csrfToken: string): Promise<AuthorizeOutcome> {
    const html = continueAsPage({ clientName: request.client.name, clientId: request.client.id, state: request.state, csrfToken, username: displayNameOf(session.user) });
    return { kind: 'page', status: 200, html, formTargets: await this.formTargets(request) };
  }

  /**
   * A standard authorization request, checked, becomes a sign-in link like the helper's (the
   * login page carries it, and it yields one code); errors the client may learn go back to it.
   */
  private async fromStandardRequest(query: unknown): Promise<VerifiedRequest | AuthorizeOutcome> {
    const read = await readAuthorizationRequest(query, (id) => this.clients.find(id), this.env.identityUrl);
    if (read.kind === 'page') return errorPage(`${read.message} Go back to the application and try again; if this happens again, tell its maker.`, 'This sign-in request does not work');
    if (read.kind === 'redirect') return read;
    const { client, redirectUri, codeChallenge, prompt, maxAge, loginHint, scope, state, nonce } = read.request;
    const link = await this.states.issue({ clientId: client.id, redirectUrl: redirectUri, codeChallenge, request: { scope, state, nonce, prompt, max_age: maxAge, login_hint: loginHint } });
    return this.verify({ response_type: 'code', client_id: client.id, state: link });
  }

  async submit(body: unknown, csrf: { cookie?: string; fresh: string }, requester: Requester, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    const request = await this.verify(body);
    if ('kind' in request) return request;
    const params = readOAuthParams(body);
    // Its one-time value, bound to the browser that signed in at the provider, is the confirmation's CSRF token.
    const confirmation = params.get('confirmation');
    if (confirmation !== undefined) return this.confirm(request, confirmation, params.get('decision'), browser);
    if (!csrfMatches(csrf.cookie, params.get('csrf_token'))) {
      return this.form(request, csrf.fresh, 403, `${csrfRefusal(csrf.cookie)} Please sign in again.`);
    }
    const asSession = params.get('session');
    if (asSession === 'another') return this.signInStep(request, csrf.fresh, browser);
    if (asSession !== undefined) {
      const session = await this.sessions.find(browser.session);
      if (!session) return this.form(request, csrf.fresh, 400, 'Your sign-in here has ended. Please sign in again.');
      return this.complete(request, session.user, browser, session);
    }
    const idp = params.get('idp');
    if (idp !== undefined) return this.toProvider(request, idp, csrf.fresh, browser);
    if (!request.methods.local) return this.form(request, csrf.fresh, 400, providersOnly(request.client.name, request.methods.providers));
    const username = params.get('username');
    const password = params.get('password');
    if (!username || !password) return this.form(request, csrf.fresh, 400, 'Enter your username and password.', username);

    const attempt = await this.logins.attempt(username, password, { clientId: request.client.id, requester });
    if (attempt.outcome !== 'signed-in') {
      const refusal = signInRefusal(attempt);
      return { ...(await this.form(request, csrf.fresh, refusal.status, refusal.message, username)), retryAfter: refusal.retryAfter };
    }
    return this.complete(request, attempt.user, browser);
  }

  /**
   * A sign-in at a provider came back for this link (GET /sso/callback/NAME). Nothing reaches
   * the device yet: the page returned asks the user to continue, saying as whom and where the
   * sign-in goes, as the login page did before the user left for the provider; `hold` keeps the
   * outcome and returns the one-time value the page's form carries.
   */
  async awaitConfirmation(
    state: string,
    clientId: string,
    signedIn: { providerName: string; username?: string },
    hold: () => Promise<string>,
  ): Promise<AuthorizeOutcome> {
    const request = await this.verify({ response_type: 'code', client_id: clientId, state });
    if ('kind' in request) return request;
    const device = deviceAddress(request);
    if (device && !(device instanceof URL)) return device;
    const confirmation = await hold();
    const { client } = request;
    const app = request.claims.request !== undefined;
    const html = confirmPage({ clientName: client.name, clientId: client.id, state, confirmation, ...signedIn, deviceHost: app ? undefined : device?.host, app });
    return { kind: 'page', status: 200, html, formTargets: device ? [device.origin] : [] };
  }

  /**
   * The sign-in was cancelled at the provider: the link is spent, a device waiting at its
   * redirect URL is sent `access_denied`, a polling one is answered it from now on.
   */
  async cancelUpstream(state: string, clientId: string): Promise<AuthorizeOutcome> {
    const request = await this.verify({ response_type: 'code', client_id: clientId, state });
    return 'kind' in request ? request : this.deny(request);
  }

  /** The user continued (or cancelled) on the page after a sign-in at a provider: the held outcome goes to the device now. */
  private async confirm(request: VerifiedRequest, confirmation: string, decision: string | undefined, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    if (decision !== 'continue' && decision !== 'cancel') return errorPage(`The form was changed: choose Continue or Cancel. ${AGAIN}`);
    const held = await this.confirmations.take(confirmation, browser.binding, request.state);
    if (!held) return errorPage(`This sign-in was not finished in this browser, or is too old. ${AGAIN}`, 'This sign-in does not work');
    if (decision === 'cancel') return this.deny(request);
    // The client may have stopped signing in through this provider since.
    if (!request.methods.providers.some(({ name }) => name === held.provider.name)) return errorPage(`${request.client.name} no longer signs in through ${held.provider.displayName}. ${AGAIN}`);
    if (held.mode === 'relay') return this.handOverRelayed(request, held.provider, held.tokens);
    const user = await this.users.findById(held.userId);
    if (!user || user.disabledAt) return { kind: 'page', status: 403, html: messagePage('Your account is disabled', `Your account has been disabled here by an administrator, so it cannot sign in. ${AGAIN}`) };
    return this.complete(request, user, browser, { upstreamSessionId: held.upstreamSessionId });
  }

  /** Relay mode: the provider's tokens wait for this link's device, which gets its code now (a redirect) or by polling. */
  private async handOverRelayed(request: VerifiedRequest, provider: IdentityProviderEntity, tokens: oidc.TokenEndpointResponse): Promise<AuthorizeOutcome> {
    const { claims, client } = request;
    const device = deviceAddress(request);
    if (device && !(device instanceof URL)) return device;
    const link = { stateId: claims.jti, clientId: client.id, redirectUrl: claims.redirect_url ?? null, codeChallenge: claims.code_challenge ?? null, stateExpiresAt: new Date(claims.exp * 1000) };
    const code = await this.relay.handOverToHelper(provider, link, tokens);
    if (code === undefined) return alreadyUsed();
    if (code === null || !device) {
      this.approved.add(claims.jti, claims.exp * 1000);
      return { kind: 'page', status: 200, html: signedInPage({ clientName: client.name, providerName: provider.displayName }) };
    }
    return this.toClient(request, device, { code });
  }

  /** The link ends without a sign-in: a device waiting at its redirect URL is sent `access_denied`, a polling one is answered it from now on. */
  private async deny(request: VerifiedRequest): Promise<AuthorizeOutcome> {
    const { claims, client } = request;
    if (!(await this.codes.deny({ stateId: claims.jti, clientId: client.id, redirectUrl: claims.redirect_url ?? null, stateExpiresAt: new Date(claims.exp * 1000) }))) return alreadyUsed();
    const device = deviceAddress(request);
    if (!device) {
      this.approved.add(claims.jti, claims.exp * 1000);
      return { kind: 'page', status: 200, html: messagePage('Sign-in cancelled', `${client.name} was not signed in. Return to your device: it will tell you the sign-in was cancelled.`) };
    }
    return device instanceof URL ? this.toClient(request, device, { error: 'access_denied' }) : device;
  }

  /** The round trip to a provider the client signs in with: a redirect there, or the form again saying why not. */
  private async toProvider(request: VerifiedRequest, name: string, csrfToken: string, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    const provider = request.methods.providers.find((candidate) => candidate.name === name);
    if (!provider) return this.form(request, csrfToken, 400, NOT_OFFERED);
    try {
      const purpose = { kind: 'helper', state: request.state, clientId: request.client.id } as const;
      return { kind: 'redirect', location: await this.upstream.start(provider, purpose, browser.bind(), new Date(request.claims.exp * 1000)) };
    } catch (error) {
      if (!(error instanceof UpstreamFailure)) throw error;
      const { retryAfter, title, message } = providerUnavailable(provider);
      return { kind: 'page', status: 503, html: messagePage(title, message), retryAfter };
    }
  }

  /**
   * The link answered for `user`: within the browser's live `session`, or after a sign-in here
   * (a password, or a brokered provider's with its upstream session), which begins a session.
   */
  private async complete(
    request: VerifiedRequest,
    user: ApprovingUser,
    browser: LoginBrowser,
    signedIn: BrowserSession | { upstreamSessionId: string | null } = { upstreamSessionId: null },
  ): Promise<AuthorizeOutcome> {
    const session = 'sid' in signedIn ? signedIn : await this.startSession(user, signedIn.upstreamSessionId, browser);
    const upstreamSessionId = session.upstreamSessionId;
    const { client, claims } = request;
    const approval = {
      stateId: claims.jti,
      clientId: client.id,
      userId: user.id,
      userStamp: user.tokensValidAfter,
      redirectUrl: claims.redirect_url ?? null,
      codeChallenge: claims.code_challenge ?? null,
      stateExpiresAt: new Date(claims.exp * 1000),
      upstreamSessionId,
      request: claims.request ? { scope: formatScope(claims.request.scope), nonce: claims.request.nonce, auth_time: Math.floor(session.authTime.getTime() / 1000), sid: session.sid } : null,
    };
    const device = deviceAddress(request);
    if (!device) {
      if (!(await this.codes.approveForPolling(approval))) return alreadyUsed();
      // Every instance hears of it by NOTIFY; this one knows at once, for a device polling here.
      this.approved.add(claims.jti, claims.exp * 1000);
      return { kind: 'page', status: 200, html: signedInPage({ clientName: client.name, username: displayNameOf(user) }) };
    }
    if (!(device instanceof URL)) return device;
    const code = await this.codes.approveWithRedirect(approval);
    return code ? this.toClient(request, device, { code }) : alreadyUsed();
  }

  /** A session for a user who just signed in here, its cookie set on the browser. */
  private async startSession(user: ApprovingUser, upstreamSessionId: string | null, browser: LoginBrowser): Promise<BrowserSession> {
    const { secret, session } = await this.sessions.start(user.id, upstreamSessionId);
    browser.startSession(secret);
    return session;
  }

  /** A standard request refused at its redirect_uri (OpenID Connect Core §3.1.2.6). */
  private refuse(request: VerifiedRequest, error: string, description: string): AuthorizeOutcome {
    return this.toClient(request, new URL(request.claims.redirect_url!), { error, error_description: description });
  }

  /**
   * The browser sent back to where the link's sign-in goes: the helper's device gets its `state`
   * back; a standard request's client its own `state` and the issuer (RFC 9207).
   */
  private toClient(request: VerifiedRequest, device: URL, params: Record<string, string>): AuthorizeOutcome {
    const asked = request.claims.request;
    if (!asked) return toDevice(device, { ...params, state: request.state });
    return { kind: 'redirect', location: authorizationResponse(device.href, this.env.identityUrl, { ...params, state: asked.state }) };
  }

  /** The request's client, state and response type; an error page for anything wrong. */
  private async verify(input: unknown): Promise<VerifiedRequest | AuthorizeOutcome> {
    let params: OAuthParams;
    try {
      params = readOAuthParams(input);
    } catch (error) {
      if (error instanceof OAuthError) return errorPage(`The link is malformed: a parameter is repeated or holds a character it cannot. ${AGAIN}`);
      throw error;
    }
    if (params.get('response_type') !== 'code') return errorPage(`The link asks for an unsupported response type. ${AGAIN}`);
    const client = await this.clients.find(params.get('client_id') ?? '');
    if (!client) return errorPage('The link is for an application that is not registered here. Check the address, or ask the maker of your device.');
    if (!client.enabled) return errorPage(`${client.name} has been disabled by an administrator, so it cannot sign in.`);
    const state = params.get('state');
    try {
      const claims = await this.states.verify(state, client.id);
      if (await this.codes.isStateUsed(claims.jti)) return alreadyUsed();
      const methods = await this.methods.of(client);
      // Only when its one provider was deleted meanwhile (idp:delete checks, but not under the client's lock).
      if (!methods.local && methods.providers.length === 0) return errorPage(`${client.name} has no way to sign in set up right now. Ask the administrator of this service.`, 'Sign-in is not available');
      return { client, state: state!, claims, methods };
    } catch (error) {
      if (error instanceof InvalidState) {
        return error.expired ? errorPage(`Sign-in links work for a few minutes only. ${AGAIN}`, 'This sign-in link has expired') : errorPage(`The link is incomplete or was changed. ${AGAIN}`);
      }
      throw error;
    }
  }

  private async form(request: VerifiedRequest, csrfToken: string, status: number, error?: string, username?: string): Promise<AuthorizeOutcome & { kind: 'page' }> {
    const device = request.claims.redirect_url ? new URL(request.claims.redirect_url) : undefined;
    const { local, providers } = request.methods;
    // A device's host is named so its user can tell it is theirs; a standard request's redirect_uri is the client's own, registered exactly.
    const deviceHost = request.claims.request ? undefined : device?.host;
    const html = loginPage({ clientName: request.client.name, clientId: request.client.id, state: request.state, csrfToken, error, username, deviceHost, local, providers });
    return { kind: 'page', status, html, formTargets: await this.formTargets(request) };
  }

  /** Where the page's forms may lead after a redirect (Chrome applies form-action to it): the device, and the client's providers. */
  private async formTargets({ claims, methods }: VerifiedRequest): Promise<string[]> {
    const device = claims.redirect_url ? [new URL(claims.redirect_url).origin] : [];
    return [...device, ...(methods.providers.length > 0 ? await this.methods.formTargets() : [])];
  }
}

/**
 * Where the device waits, if it gave a redirect URL: checked again, as the state's signature
 * proves it unchanged since it was checked but an operator may have removed its pattern since
 * (then an error page). Undefined for a polling device.
 */
function deviceAddress({ client, claims }: VerifiedRequest): URL | AuthorizeOutcome | undefined {
  if (!claims.redirect_url) return undefined;
  const location = new URL(claims.redirect_url);
  return isRedirectAllowed(location, client.redirectPatterns) ? location : errorPage(`The device address is no longer allowed for this application. ${AGAIN}`);
}

/** The browser sent to the device with `params` added (`code` and `state`, or `error` and `state`). */
function toDevice(device: URL, params: Record<string, string>): AuthorizeOutcome {
  const location = new URL(device);
  for (const [name, value] of Object.entries(params)) location.searchParams.append(name, value);
  return { kind: 'redirect', location: location.href };
}
