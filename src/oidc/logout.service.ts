import { Injectable } from '@nestjs/common';
import * as oidc from 'openid-client';
import { ClientsService } from '../clients/clients.service.js';
import { csrfMatches, csrfRefusal, type HtmlPage } from '../common/html/html-reply.js';
import { messagePage } from '../common/html/page-layout.js';
import { IdentityProvidersService } from '../identity-providers/identity-providers.service.js';
import { UpstreamClientsService } from '../identity-providers/upstream-clients.service.js';
import { UpstreamSessionsRepository } from '../identity-providers/sign-in/upstream-sessions.repository.js';
import { BrowserSessionsRepository } from '../sessions/browser-sessions.repository.js';
import { IdTokenHintsService } from '../token/id-token-hints.service.js';
import { OAuthError } from '../oauth/oauth-error.js';
import { type OAuthParams, readOAuthParams } from '../oauth/oauth-params.js';
import { displayNameOf } from '../users/user.entity.js';
import { confirmLogoutPage, signedOutPage } from './logout-pages.js';
import { type AppReturn, ProviderLogoutReturnsService } from './provider-logout-returns.service.js';

/** What /sso/logout answers; `endSession`: the browser's session cookie is to be cleared. */
export type LogoutAnswer = ({ kind: 'redirect'; location: string } | { kind: 'page'; page: HtmlPage; form?: boolean }) & { endSession?: boolean };

/** The parameters of RP-Initiated Logout 1.0 §2 the service reads (the confirmation form carries them on). */
const CARRIED = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state'] as const;

const refused = (message: string): LogoutAnswer => ({ kind: 'page', page: { status: 400, html: messagePage('This sign-out link does not work', message) } });

const signedOut = (): LogoutAnswer => ({ kind: 'page', page: { status: 200, html: signedOutPage() } });

/**
 * RP-Initiated Logout 1.0: ends the browser's session at the service, then sends the browser to
 * the post_logout_redirect_uri the client registered (with its `state`); else a "signed out"
 * page. For a user who signed in through an identity provider with an end_session_endpoint, the
 * browser first goes there, and the provider sends it back to /sso/logout/done, which goes on as
 * the application asked (brokers chain their sign-outs so). It ends a session at once only for
 * an ID token of that session's user (`id_token_hint`); otherwise the user confirms, so a link
 * alone never signs anyone out. It never redirects to an address the client did not register.
 */
@Injectable()
export class LogoutService {
  constructor(
    private readonly hints: IdTokenHintsService,
    private readonly clients: ClientsService,
    private readonly sessions: BrowserSessionsRepository,
    private readonly upstreamSessions: UpstreamSessionsRepository,
    private readonly registry: IdentityProvidersService,
    private readonly upstream: UpstreamClientsService,
    private readonly returns: ProviderLogoutReturnsService,
  ) {}

  /** `confirmation`: the confirmation form's CSRF pair (its cookie and its field), when it is what was posted. */
  async answer(input: unknown, sessionCookie: string | undefined, csrfToken: string, confirmation?: { cookie?: string }): Promise<LogoutAnswer> {
    let params: OAuthParams;
    try {
      params = readOAuthParams(input);
    } catch (error) {
      if (error instanceof OAuthError) return refused('The sign-out link is malformed: a parameter is repeated or holds a character it cannot.');
      throw error;
    }
    const hintText = params.get('id_token_hint');
    const hint = hintText === undefined ? undefined : await this.hints.read(hintText);
    if (hintText !== undefined && !hint) return refused('The sign-out link carries an ID token this service did not issue.');
    const clientId = params.get('client_id');
    if (hint && clientId !== undefined && clientId !== hint.aud) return refused('The sign-out link names two different applications.');
    const named = hint?.aud ?? clientId;
    const client = named === undefined || named.length > 256 ? null : await this.clients.find(named);
    const redirectUri = params.get('post_logout_redirect_uri');
    if (redirectUri !== undefined && (!client || !this.clients.isPostLogoutRedirectAllowed(client, redirectUri))) {
      return refused('The address to return to after signing out is not one the application registered.');
    }
    if (confirmation && !csrfMatches(confirmation.cookie, params.get('csrf_token'))) {
      return { kind: 'page', page: { status: 403, html: messagePage('Sign-out not confirmed', `${csrfRefusal(confirmation.cookie)} Try signing out again.`) } };
    }

    const session = await this.sessions.find(sessionCookie);
    if (session && !confirmation && hint?.sub !== session.user.id) {
      const fields = Object.fromEntries(CARRIED.flatMap((name) => (params.has(name) ? [[name, params.get(name)!]] : [])));
      const html = confirmLogoutPage({ username: displayNameOf(session.user), csrfToken, fields });
      return { kind: 'page', page: { status: 200, html, formTargets: await this.formTargets(session.upstreamSessionId, redirectUri) }, form: true };
    }
    const ended = session && sessionCookie ? await this.sessions.end(sessionCookie) : undefined;
    const app = client && redirectUri !== undefined ? { clientId: client.id, redirectUri, state: params.get('state') } : undefined;
    const atProvider = ended?.upstreamSessionId ? await this.providerEndSession(ended.upstreamSessionId, app) : undefined;
    if (atProvider) return { kind: 'redirect', location: atProvider, endSession: true };
    if (app) return { kind: 'redirect', location: withState(app.redirectUri, app.state), endSession: true };
    return { ...signedOut(), endSession: true };
  }

  /**
   * GET /sso/logout/done, where a provider's sign-out sends the browser back: on to the
   * application's address with its `state` when the state carries one still registered for its
   * client; otherwise (none asked, or a state forged, changed or expired) "You're signed out".
   */
  async afterProvider(query: unknown): Promise<LogoutAnswer> {
    const state = typeof query === 'object' && query !== null ? (query as Record<string, unknown>).state : undefined;
    // A repeated state is an array: no state of the service's.
    const app = typeof state === 'string' && state !== '' ? await this.returns.read(state) : undefined;
    const client = app ? await this.clients.find(app.clientId) : null;
    if (!app || !client || !this.clients.isPostLogoutRedirectAllowed(client, app.redirectUri)) return signedOut();
    return { kind: 'redirect', location: withState(app.redirectUri, app.state) };
  }

  /**
   * The provider's end_session_endpoint for a brokered sign-in (OpenID Connect RP-Initiated
   * Logout), if it has one and answers. The provider sends the browser back to /sso/logout/done,
   * with a state that leads on to the application when it asked for an address (`app`).
   */
  private async providerEndSession(upstreamSessionId: string, app: AppReturn | undefined): Promise<string | undefined> {
    const configuration = await this.providerLogout(upstreamSessionId);
    if (!configuration) return undefined;
    // The service keeps no upstream ID token for id_token_hint: openid-client sends client_id, which names the registration.
    const back = { post_logout_redirect_uri: this.returns.returnUrl, ...(app ? { state: await this.returns.issue(app) } : {}) };
    return oidc.buildEndSessionUrl(configuration, back).href;
  }

  /** The provider a brokered sign-in went through, when it has an end_session_endpoint and answers (its discovery is cached). */
  private async providerLogout(upstreamSessionId: string): Promise<oidc.Configuration | undefined> {
    const name = await this.upstreamSessions.providerOf(upstreamSessionId);
    const provider = name === undefined ? undefined : await this.registry.find(name);
    if (!provider) return undefined;
    // Unreachable, or without a usable end_session_endpoint: the service's own sign-out stands alone.
    const configuration = await this.upstream.configuration(provider).catch(() => undefined);
    const endpoint = configuration?.serverMetadata().end_session_endpoint;
    return endpoint && URL.canParse(endpoint) ? configuration : undefined;
  }

  /**
   * Where the "Sign out?" form's answer may lead: Chrome applies form-action to the redirect that
   * follows a POST, so the provider's sign-out and the application's address are allowed too.
   */
  private async formTargets(upstreamSessionId: string | null, redirectUri: string | undefined): Promise<string[]> {
    const atProvider = upstreamSessionId ? (await this.providerLogout(upstreamSessionId))?.serverMetadata().end_session_endpoint : undefined;
    return [atProvider, redirectUri].filter((url) => url !== undefined).map((url) => new URL(url).origin);
  }
}

const withState = (uri: string, state: string | undefined) => {
  if (state === undefined) return uri;
  const url = new URL(uri);
  url.searchParams.append('state', state);
  return url.href;
};
