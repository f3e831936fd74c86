import { Injectable } from '@nestjs/common';
import type { ClientEntity } from '../clients/client.entity.js';
import { ClientsService } from '../clients/clients.service.js';
import { isAppRedirectAllowed, isRedirectAllowed, readRedirectUrl } from '../clients/redirect-pattern.js';
import type { HtmlPage } from '../common/html/html-reply.js';
import { messagePage } from '../common/html/page-layout.js';
import { Env } from '../config/env.js';
import { type SignInChoice, SignInMethodsService } from '../identity-providers/sign-in-methods.service.js';
import { AuthorizationCodeIssuerService } from '../codes/authorization-code-issuer.service.js';
import { IdTokenHintsService } from '../token/id-token-hints.service.js';
import { OAuthError } from '../oauth/oauth-error.js';
import { type OAuthParams, readOAuthParams } from '../oauth/oauth-params.js';
import { authorizationResponse, readAuthorizationRequest } from './authorization-request.js';
import { InvalidState, type StateClaims, StateTokensService } from './state-tokens.service.js';

/** What /sso/authorize answers: an HTML page, or a redirect to the device's or the client's verified URL. */
export type AuthorizeOutcome = ({ kind: 'page' } & HtmlPage) | { kind: 'redirect'; location: string };

/** A sign-in link checked: its client, its state (the signed link) and claims, and how the client's users sign in. */
export interface SignInLink {
  client: ClientEntity;
  state: string;
  claims: StateClaims;
  methods: SignInChoice;
}

export const errorPage = (message: string, title = 'This sign-in link does not work'): AuthorizeOutcome => ({
  kind: 'page',
  status: 400,
  html: messagePage(title, message),
});
export const AGAIN = 'Start the sign-in again from your device.';
/** A stale tab or the browser's history: the user may already be done. */
export const alreadyUsed = () =>
  errorPage(`This link has already been used to sign in. If your device is not signed in, ${AGAIN.toLowerCase()}`, 'This sign-in link was already used');

/**
 * Sign-in links: the helper's (a state the configuration route signed), or one a standard
 * authorization request becomes, so everything after serves both. A link is checked at every
 * step (it may have been used, or its client disabled, meanwhile), and decides where the
 * browser goes back to and with what.
 */
@Injectable()
export class SignInLinksService {
  constructor(
    private readonly clients: ClientsService,
    private readonly states: StateTokensService,
    private readonly codes: AuthorizationCodeIssuerService,
    private readonly methods: SignInMethodsService,
    private readonly hints: IdTokenHintsService,
    private readonly env: Env,
  ) {}

  /** The link's client, state and response type; an error page for anything wrong. */
  async verify(input: unknown): Promise<SignInLink | AuthorizeOutcome> {
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
      const offered = await this.methods.of(client);
      // A relayed sign-in hands the provider's own tokens over: no ID token of the service, no nonce, so not for an app's standard request.
      const methods = claims.request ? { ...offered, providers: offered.providers.filter((provider) => provider.mode === 'broker') } : offered;
      // Only when its one provider was deleted meanwhile (idp:delete checks, but not under the client's lock), or relays.
      if (!methods.local && methods.providers.length === 0) return errorPage(`${client.name} has no way to sign in set up right now. Ask the administrator of this service.`, 'Sign-in is not available');
      return { client, state: state!, claims, methods };
    } catch (error) {
      if (error instanceof InvalidState) {
        return error.expired ? errorPage(`Sign-in links work for a few minutes only. ${AGAIN}`, 'This sign-in link has expired') : errorPage(`The link is incomplete or was changed. ${AGAIN}`);
      }
      throw error;
    }
  }

  /**
   * A standard authorization request, checked, becomes a sign-in link like the helper's (the
   * login page carries it, and it yields one code); errors the client may learn go back to it.
   */
  async fromStandardRequest(query: unknown): Promise<SignInLink | AuthorizeOutcome> {
    const lookups = { findClient: (id: string) => this.clients.find(id), readIdTokenHint: (token: string) => this.hints.read(token) };
    const read = await readAuthorizationRequest(query, lookups, this.env.identityUrl);
    if (read.kind === 'page') return errorPage(`${read.message} Go back to the application and try again; if this happens again, tell its maker.`, 'This sign-in request does not work');
    if (read.kind === 'redirect') return read;
    const { client, redirectUri, codeChallenge, prompt, maxAge, loginHint, hintedUserId, scope, state, nonce } = read.request;
    const request = { scope, state, nonce, prompt, max_age: maxAge, login_hint: loginHint, hinted_sub: hintedUserId };
    const link = await this.states.issue({ clientId: client.id, redirectUrl: redirectUri, codeChallenge, request });
    return this.verify({ response_type: 'code', client_id: client.id, state: link });
  }

  /**
   * The browser sent back to where the link's sign-in goes, with the issuer (RFC 9207: every
   * authorization response names it, so a client talking to several servers can tell whose code
   * it holds): the helper's device gets its signed `state` back; a standard request's client its own.
   */
  toClient(link: SignInLink, device: URL, params: Record<string, string>): AuthorizeOutcome {
    const asked = link.claims.request;
    return { kind: 'redirect', location: authorizationResponse(device.href, this.env.identityUrl, { ...params, state: asked ? asked.state : link.state }) };
  }

  /** A standard request refused at its redirect_uri (OpenID Connect Core §3.1.2.6). */
  refuse(link: SignInLink, error: string, description: string): AuthorizeOutcome {
    return this.toClient(link, new URL(link.claims.redirect_url!), { error, error_description: description });
  }
}

/**
 * Where the device (or the app) waits, if the link has a redirect URL: checked again, as the
 * state's signature proves it unchanged since it was checked but an operator may have removed its
 * pattern since (then an error page). Undefined for a polling device.
 */
export function deviceAddress({ client, claims }: SignInLink): URL | AuthorizeOutcome | undefined {
  if (!claims.redirect_url) return undefined;
  // Read again as at the start: a link signed before a rule was added meets it too.
  const location = readRedirectUrl(claims.redirect_url);
  const allowed = claims.request ? isAppRedirectAllowed : isRedirectAllowed;
  return location && allowed(location, client.redirectPatterns) ? location : errorPage(`The device address is no longer allowed for this application. ${AGAIN}`);
}
