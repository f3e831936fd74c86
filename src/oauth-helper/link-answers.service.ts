import { Injectable } from '@nestjs/common';
import type * as oidc from 'openid-client';
import { messagePage } from '../common/html/page-layout.js';
import type { IdentityProviderEntity } from '../identity-providers/identity-provider.entity.js';
import { RelayService } from '../identity-providers/relay/relay.service.js';
import { type BrowserSession, BrowserSessionsRepository } from '../sessions/browser-sessions.repository.js';
import { AuthorizationCodeIssuerService } from '../codes/authorization-code-issuer.service.js';
import { formatScope } from '../oauth/scope.js';
import { displayNameOf, type UserEntity } from '../users/user.entity.js';
import { ApprovedStatesService } from './approved-states.service.js';
import type { LoginBrowser } from './login-browser.js';
import { signedInPage } from './login-page.js';
import { alreadyUsed, type AuthorizeOutcome, deviceAddress, type SignInLink, SignInLinksService } from './sign-in-links.service.js';

/** A signed-in user as the approval needs them. */
export type ApprovingUser = Pick<UserEntity, 'id' | 'username' | 'profile' | 'tokensValidAfter'>;

/**
 * How a sign-in link ends, once: approved for a user (a code, now at the redirect URL or later
 * for a polling device), denied, or relayed (the provider's tokens wait for the device). A link
 * already used ends nowhere ("already used"). A polling device's instance knows at once; the
 * others by NOTIFY.
 */
@Injectable()
export class LinkAnswersService {
  constructor(
    private readonly links: SignInLinksService,
    private readonly codes: AuthorizationCodeIssuerService,
    private readonly approved: ApprovedStatesService,
    private readonly relay: RelayService,
    private readonly sessions: BrowserSessionsRepository,
  ) {}

  /**
   * The link answered for `user`: within the browser's live `session`, or after a sign-in here
   * (a password, or a brokered provider's with its upstream session), which begins a session.
   */
  async approve(
    link: SignInLink,
    user: ApprovingUser,
    browser: Pick<LoginBrowser, 'startSession'>,
    signedIn: BrowserSession | { upstreamSessionId: string | null } = { upstreamSessionId: null },
  ): Promise<AuthorizeOutcome> {
    const session = 'sid' in signedIn ? signedIn : await this.startSession(user, signedIn.upstreamSessionId, browser);
    // Signed out or disabled since the sign-in was checked: nothing is started, nor approved.
    if (!session) return alreadyUsed();
    const { client, claims } = link;
    // Core §3.1.2.1: the request named its user by an ID token, and someone else signed in.
    if (claims.request?.hinted_sub !== undefined && claims.request.hinted_sub !== user.id) {
      return this.links.refuse(link, 'login_required', 'the user who signed in is not the one id_token_hint names');
    }
    const approval = {
      stateId: claims.jti,
      clientId: client.id,
      userId: user.id,
      userStamp: user.tokensValidAfter,
      redirectUrl: claims.redirect_url ?? null,
      codeChallenge: claims.code_challenge ?? null,
      stateExpiresAt: new Date(claims.exp * 1000),
      upstreamSessionId: session.upstreamSessionId,
      request: claims.request ? { scope: formatScope(claims.request.scope), nonce: claims.request.nonce } : null,
      // The sign-in behind the answer, for its ID tokens: the one just made, or the session's that was continued.
      signIn: { authTime: session.authTime, sid: session.sid },
    };
    const device = deviceAddress(link);
    if (!device) {
      if (!(await this.codes.approveForPolling(approval))) return alreadyUsed();
      // Every instance hears of it by NOTIFY; this one knows at once, for a device polling here.
      this.approved.add(claims.jti, claims.exp * 1000);
      return { kind: 'page', status: 200, html: signedInPage({ clientName: client.name, username: displayNameOf(user) }) };
    }
    if (!(device instanceof URL)) return device;
    const code = await this.codes.approveWithRedirect(approval);
    return code ? this.links.toClient(link, device, { code }) : alreadyUsed();
  }

  /** The link ends without a sign-in: a device waiting at its redirect URL is sent `access_denied`, a polling one is answered it from now on. */
  async deny(link: SignInLink): Promise<AuthorizeOutcome> {
    const { claims, client } = link;
    if (!(await this.codes.deny({ stateId: claims.jti, clientId: client.id, redirectUrl: claims.redirect_url ?? null, stateExpiresAt: new Date(claims.exp * 1000) }))) return alreadyUsed();
    const device = deviceAddress(link);
    if (!device) {
      this.approved.add(claims.jti, claims.exp * 1000);
      return { kind: 'page', status: 200, html: messagePage('Sign-in cancelled', `${client.name} was not signed in. Return to your device: it will tell you the sign-in was cancelled.`) };
    }
    return device instanceof URL ? this.links.toClient(link, device, { error: 'access_denied' }) : device;
  }

  /** Relay mode: the provider's tokens wait for this link's device, which gets its code now (a redirect) or by polling. */
  async relayed(link: SignInLink, provider: IdentityProviderEntity, tokens: oidc.TokenEndpointResponse): Promise<AuthorizeOutcome> {
    const { claims, client } = link;
    const device = deviceAddress(link);
    if (device && !(device instanceof URL)) return device;
    const handOver = { stateId: claims.jti, clientId: client.id, redirectUrl: claims.redirect_url ?? null, codeChallenge: claims.code_challenge ?? null, stateExpiresAt: new Date(claims.exp * 1000) };
    const code = await this.relay.handOverToHelper(provider, handOver, tokens);
    if (code === undefined) return alreadyUsed();
    if (code === null || !device) {
      this.approved.add(claims.jti, claims.exp * 1000);
      return { kind: 'page', status: 200, html: signedInPage({ clientName: client.name, providerName: provider.displayName }) };
    }
    return this.links.toClient(link, device, { code });
  }

  /** A session for a user who just signed in here, its cookie set on the browser. */
  private async startSession(user: ApprovingUser, upstreamSessionId: string | null, browser: Pick<LoginBrowser, 'startSession'>): Promise<BrowserSession | undefined> {
    const started = await this.sessions.start(user, upstreamSessionId);
    if (started) browser.startSession(started.secret);
    return started?.session;
  }
}
