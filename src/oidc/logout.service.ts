import { Injectable } from '@nestjs/common';
import * as oidc from 'openid-client';
import { ClientsService } from '../clients/clients.service.js';
import { csrfMatches, csrfRefusal, type HtmlPage } from '../common/html/html-reply.js';
import { messagePage } from '../common/html/page-layout.js';
import { IdentityProvidersService } from '../identity-providers/identity-providers.service.js';
import { UpstreamClients } from '../identity-providers/upstream-clients.service.js';
import { UpstreamSessionsRepository } from '../identity-providers/upstream-sessions.repository.js';
import { BrowserSessionsRepository } from '../sessions/browser-sessions.repository.js';
import { IdTokenHints } from '../token/id-token-hints.js';
import { OAuthError } from '../token/oauth-error.js';
import { type OAuthParams, readOAuthParams } from '../token/oauth-params.js';
import { displayNameOf } from '../users/user.entity.js';
import { confirmLogoutPage, signedOutPage } from './logout-pages.js';

/** What /sso/logout answers; `endSession`: the browser's session cookie is to be cleared. */
export type LogoutAnswer = ({ kind: 'redirect'; location: string } | { kind: 'page'; page: HtmlPage; form?: boolean }) & { endSession?: boolean };

/** The parameters of RP-Initiated Logout 1.0 §2 the service reads (the confirmation form carries them on). */
const CARRIED = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state'] as const;

const refused = (message: string): LogoutAnswer => ({ kind: 'page', page: { status: 400, html: messagePage('This sign-out link does not work', message) } });

/**
 * RP-Initiated Logout 1.0: ends the browser's session at the service, then sends the browser to
 * the post_logout_redirect_uri the client registered (with its `state`), or, for a user who signed
 * in through an identity provider, on to that provider's end_session_endpoint; else a "signed out"
 * page. It ends a session at once only for an ID token of that session's user (`id_token_hint`);
 * otherwise the user confirms, so a link alone never signs anyone out. It never redirects to an
 * address the client did not register.
 */
@Injectable()
export class LogoutService {
  constructor(
    private readonly hints: IdTokenHints,
    private readonly clients: ClientsService,
    private readonly sessions: BrowserSessionsRepository,
    private readonly upstreamSessions: UpstreamSessionsRepository,
    private readonly registry: IdentityProvidersService,
    private readonly upstream: UpstreamClients,
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
      return { kind: 'page', page: { status: 200, html: confirmLogoutPage({ username: displayNameOf(session.user), csrfToken, fields }) }, form: true };
    }
    const ended = session && sessionCookie ? await this.sessions.end(sessionCookie) : undefined;
    const atProvider = ended?.upstreamSessionId ? await this.providerEndSession(ended.upstreamSessionId) : undefined;
    if (atProvider) return { kind: 'redirect', location: atProvider, endSession: true };
    if (redirectUri !== undefined) return { kind: 'redirect', location: withState(redirectUri, params.get('state')), endSession: true };
    return { kind: 'page', page: { status: 200, html: signedOutPage() }, endSession: true };
  }

  /** The provider's end_session_endpoint for a brokered sign-in (OpenID Connect RP-Initiated Logout), if it has one and answers. */
  private async providerEndSession(upstreamSessionId: string): Promise<string | undefined> {
    const name = await this.upstreamSessions.providerOf(upstreamSessionId);
    const provider = name === undefined ? undefined : await this.registry.find(name);
    if (!provider) return undefined;
    // Unreachable, or without an end_session_endpoint: the service's own sign-out stands alone.
    return this.upstream
      .call(provider, async (configuration) => (configuration.serverMetadata().end_session_endpoint ? oidc.buildEndSessionUrl(configuration).href : undefined))
      .catch(() => undefined);
  }
}

const withState = (uri: string, state: string | undefined) => {
  if (state === undefined) return uri;
  const url = new URL(uri);
  url.searchParams.append('state', state);
  return url.href;
};
