import { Injectable } from '@nestjs/common';
import { csrfMatches, csrfRefusal } from '../common/html/html-reply.js';
import type { Requester } from '../common/http/requester.js';
import { messagePage } from '../common/html/page-layout.js';
import { ENDED_SIGN_IN } from '../identity-providers/sign-in/ended-sign-in.js';
import { SignInConfirmationsService } from '../identity-providers/sign-in/sign-in-confirmations.service.js';
import { admitsUser, SignInMethodsService, onlyProvider } from '../identity-providers/sign-in-methods.service.js';
import { ACCOUNT_DISABLED, NOT_OFFERED, providersOnly, providerUnavailable } from '../identity-providers/sign-in/sign-in-messages.js';
import { UpstreamFailure } from '../identity-providers/upstream-failure.js';
import { UpstreamSignInService } from '../identity-providers/sign-in/upstream-sign-in.service.js';
import { type BrowserSession, BrowserSessionsRepository } from '../sessions/browser-sessions.repository.js';
import { readOAuthParams } from '../oauth/oauth-params.js';
import { displayNameOf } from '../users/user.entity.js';
import { UsersService } from '../users/users.service.js';
import { isStandardRequest } from './authorization-request.js';
import { LinkAnswersService } from './link-answers.service.js';
import { LoginAttemptsService, signInRefusal } from './login-attempts.service.js';
import type { LoginBrowser } from './login-browser.js';
import { confirmPage, continueAsPage, loginPage } from './login-page.js';
import { AGAIN, type AuthorizeOutcome, deviceAddress, errorPage, type SignInLink, SignInLinksService } from './sign-in-links.service.js';

/**
 * The login page (/sso/authorize) of a sign-in link, the helper's or a standard request's: who
 * signs in (the browser's session, a password, an identity provider), then the link's answer.
 * Nothing is answered silently for the helper's link; a standard request is, within a session.
 */
@Injectable()
export class LoginService {
  constructor(
    private readonly links: SignInLinksService,
    private readonly answers: LinkAnswersService,
    private readonly logins: LoginAttemptsService,
    private readonly methods: SignInMethodsService,
    private readonly upstream: UpstreamSignInService,
    private readonly confirmations: SignInConfirmationsService,
    private readonly users: UsersService,
    private readonly sessions: BrowserSessionsRepository,
  ) {}

  async show(query: unknown, csrfToken: string, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    const link = isStandardRequest(query) ? await this.links.fromStandardRequest(query) : await this.links.verify(query);
    if ('kind' in link) return link;
    const session = await this.usableSession(link, browser);
    const asked = link.claims.request;
    if (asked?.prompt?.includes('none')) return session ? this.answers.approve(link, session.user, browser, session) : this.links.refuse(link, 'login_required', 'no one is signed in here in this browser');
    // Single sign-on: a standard request is answered without a page, unless it asks for one
    // (consent, or select_account: the account choice); the helper's link (someone may have sent it) never is.
    if (session && asked && !asked.prompt?.some((prompt) => prompt === 'consent' || prompt === 'select_account')) return this.answers.approve(link, session.user, browser, session);
    if (session) return this.continueAs(link, session, csrfToken);
    return this.signInStep(link, csrfToken, browser);
  }

  /**
   * The browser's session, when it may answer this link: its user is one the client lets in (its
   * sign-in methods), and a standard request does not ask for a fresh sign-in (prompt=login, or a
   * max_age the session's sign-in exceeds) nor for another user (id_token_hint; OpenID Connect
   * Core §3.1.2.1).
   */
  private async usableSession(link: SignInLink, browser: LoginBrowser): Promise<BrowserSession | undefined> {
    const session = await this.sessions.find(browser.session);
    if (!session || !admitsUser(link.methods, session.user)) return undefined;
    const asked = link.claims.request;
    if (asked?.prompt?.includes('login')) return undefined;
    if (asked?.max_age !== undefined && Date.now() - session.authTime.getTime() > asked.max_age * 1000) return undefined;
    if (asked?.hinted_sub !== undefined && asked.hinted_sub !== session.user.id) return undefined;
    return session;
  }

  async submit(body: unknown, csrf: { cookie?: string; fresh: string }, requester: Requester, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    // OpenID Connect Core §3.1.2.1: a standard request may come as a form post (the login form's own posts carry no redirect_uri).
    if (isStandardRequest(body)) return this.show(body, csrf.fresh, browser);
    const link = await this.links.verify(body);
    if ('kind' in link) return link;
    const params = readOAuthParams(body);
    // Its one-time value, bound to the browser that signed in at the provider, is the confirmation's CSRF token.
    const confirmation = params.get('confirmation');
    if (confirmation !== undefined) return this.confirm(link, confirmation, params.get('decision'), browser);
    if (!csrfMatches(csrf.cookie, params.get('csrf_token'))) {
      return this.form(link, csrf.fresh, 403, `${csrfRefusal(csrf.cookie)} Please sign in again.`);
    }
    const asSession = params.get('session');
    if (asSession === 'another') return this.signInStep(link, csrf.fresh, browser);
    if (asSession !== undefined) {
      const session = await this.usableSession(link, browser);
      if (!session) return this.form(link, csrf.fresh, 400, 'Your sign-in here has ended. Please sign in again.');
      return this.answers.approve(link, session.user, browser, session);
    }
    const idp = params.get('idp');
    if (idp !== undefined) return this.toProvider(link, idp, csrf.fresh, browser);
    if (!link.methods.local) return this.form(link, csrf.fresh, 400, providersOnly(link.client.name, link.methods.providers));
    const username = params.get('username');
    const password = params.get('password');
    if (!username || !password) return this.form(link, csrf.fresh, 400, 'Enter your username and password.', username);

    const attempt = await this.logins.attempt(username, password, { clientId: link.client.id, requester });
    if (attempt.outcome !== 'signed-in') {
      const refusal = signInRefusal(attempt);
      return { ...(await this.form(link, csrf.fresh, refusal.status, refusal.message, username)), retryAfter: refusal.retryAfter };
    }
    return this.answers.approve(link, attempt.user, browser);
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
    const link = await this.links.verify({ response_type: 'code', client_id: clientId, state });
    if ('kind' in link) return link;
    const device = deviceAddress(link);
    if (device && !(device instanceof URL)) return device;
    const confirmation = await hold();
    const { client } = link;
    const app = link.claims.request !== undefined;
    const html = confirmPage({ clientName: client.name, clientId: client.id, state, confirmation, ...signedIn, deviceHost: app ? undefined : device?.host, app });
    return { kind: 'page', status: 200, html, formTargets: device ? [device.origin] : [] };
  }

  /**
   * The sign-in was cancelled at the provider: the link is spent, a device waiting at its
   * redirect URL is sent `access_denied`, a polling one is answered it from now on.
   */
  async cancelUpstream(state: string, clientId: string): Promise<AuthorizeOutcome> {
    const link = await this.links.verify({ response_type: 'code', client_id: clientId, state });
    return 'kind' in link ? link : this.answers.deny(link);
  }

  /** The user continued (or cancelled) on the page after a sign-in at a provider: the held outcome goes to the device now. */
  private async confirm(link: SignInLink, confirmation: string, decision: string | undefined, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    if (decision !== 'continue' && decision !== 'cancel') return errorPage(`The form was changed: choose Continue or Cancel. ${AGAIN}`);
    const held = await this.confirmations.take(confirmation, browser.binding, link.state);
    if (!held) return errorPage(`This sign-in was not finished in this browser, or is too old. ${AGAIN}`, 'This sign-in does not work');
    if (decision === 'cancel') return this.answers.deny(link);
    if (held === 'ended') return errorPage(ENDED_SIGN_IN.message, ENDED_SIGN_IN.title);
    // The client may have stopped signing in through this provider since.
    if (!link.methods.providers.some(({ name }) => name === held.provider.name)) return errorPage(`${link.client.name} no longer signs in through ${held.provider.displayName}. ${AGAIN}`);
    if (held.mode === 'relay') return this.answers.relayed(link, held.provider, held.tokens);
    const user = await this.users.findById(held.userId);
    if (!user || user.disabledAt) return { kind: 'page', status: 403, html: messagePage(ACCOUNT_DISABLED.title, ACCOUNT_DISABLED.message) };
    // The stamp as read with the held sign-in, not now: a sign-out since then refuses the approval.
    return this.answers.approve(link, { ...user, tokensValidAfter: held.userStamp }, browser, { upstreamSessionId: held.upstreamSessionId });
  }

  /** The sign-in itself: a client that signs in through one provider only has nothing to choose (straight there); else the form. */
  private signInStep(link: SignInLink, csrfToken: string, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    const provider = onlyProvider(link.methods);
    return provider ? this.toProvider(link, provider.name, csrfToken, browser) : this.form(link, csrfToken, 200, undefined, link.claims.request?.login_hint);
  }

  /** "Continue as USER": the browser's session may answer this link, on the user's word; or another account signs in. */
  private async continueAs(link: SignInLink, session: BrowserSession, csrfToken: string): Promise<AuthorizeOutcome> {
    // As on the login form, the helper's link names the device its sign-in goes to.
    const deviceHost = !link.claims.request && link.claims.redirect_url ? new URL(link.claims.redirect_url).host : undefined;
    const html = continueAsPage({ clientName: link.client.name, clientId: link.client.id, state: link.state, csrfToken, username: displayNameOf(session.user), deviceHost });
    return { kind: 'page', status: 200, html, formTargets: await this.formTargets(link) };
  }

  /** The round trip to a provider the client signs in with: a redirect there, or the form again saying why not. */
  private async toProvider(link: SignInLink, name: string, csrfToken: string, browser: LoginBrowser): Promise<AuthorizeOutcome> {
    const provider = link.methods.providers.find((candidate) => candidate.name === name);
    if (!provider) return this.form(link, csrfToken, 400, NOT_OFFERED);
    try {
      const purpose = { kind: 'helper', state: link.state, clientId: link.client.id } as const;
      return { kind: 'redirect', location: await this.upstream.start(provider, purpose, browser.bind(), new Date(link.claims.exp * 1000)) };
    } catch (error) {
      if (!(error instanceof UpstreamFailure)) throw error;
      const { retryAfter, title, message } = providerUnavailable(provider);
      return { kind: 'page', status: 503, html: messagePage(title, message), retryAfter };
    }
  }

  private async form(link: SignInLink, csrfToken: string, status: number, error?: string, username?: string): Promise<AuthorizeOutcome & { kind: 'page' }> {
    const device = link.claims.redirect_url ? new URL(link.claims.redirect_url) : undefined;
    const { local, providers } = link.methods;
    // A device's host is named so its user can tell it is theirs; a standard request's redirect_uri is the client's own, registered exactly.
    const deviceHost = link.claims.request ? undefined : device?.host;
    const html = loginPage({ clientName: link.client.name, clientId: link.client.id, state: link.state, csrfToken, error, username, deviceHost, local, providers });
    return { kind: 'page', status, html, formTargets: await this.formTargets(link) };
  }

  /** Where the page's forms may lead after a redirect (Chrome applies form-action to it): the device, and the client's providers. */
  private async formTargets({ claims, methods }: SignInLink): Promise<string[]> {
    const device = claims.redirect_url ? [new URL(claims.redirect_url).origin] : [];
    return [...device, ...(methods.providers.length > 0 ? await this.methods.formTargets() : [])];
  }
}
