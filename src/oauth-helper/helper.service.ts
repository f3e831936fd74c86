import { Injectable } from '@nestjs/common';
import { type ClientEntity, isPublicClient } from '../clients/client.entity.js';
import { ClientsService } from '../clients/clients.service.js';
import { InvalidRedirectUrl, isRedirectAllowed, parseRedirectUrl } from '../clients/redirect-pattern.js';
import type { AnswerDeadline } from '../common/http/request-deadlines.js';
import { Env } from '../config/env.js';
import { RelayService } from '../identity-providers/relay/relay.service.js';
import { AuthorizationCodeIssuerService } from '../codes/authorization-code-issuer.service.js';
import { invalidRequest, OAuthError } from '../oauth/oauth-error.js';
import { readOAuthParams } from '../oauth/oauth-params.js';
import { S256_CHALLENGE } from '../oauth/pkce.js';
import { ApprovedStatesService } from './approved-states.service.js';
import { PollLimiter } from './poll-limiter.js';
import { InvalidState, StateTokensService } from './state-tokens.service.js';

/** The helper flow's configuration, plus two fields its clients ignore and newer ones can use. */
export interface HelperConfig {
  authorize_url: string;
  code_url: string;
  accesstoken_request_url: string;
  /** Seconds a device must wait between polls of code_url (faster polls get 429). */
  interval: number;
  /** Seconds the sign-in link (its state) stays valid. */
  expires_in: number;
}

/** The answer while no code is waiting: the usual outcome of a poll, so it is a value, not an exception. */
export const NO_CODE = Object.freeze({ error: 'not_found', error_description: 'no authorization code is available for this state' });

/** The helper's configuration and code poll: hand out sign-in links, and their codes to polling devices. */
@Injectable()
export class HelperService {
  private readonly polls: PollLimiter;

  constructor(
    private readonly clients: ClientsService,
    private readonly states: StateTokensService,
    private readonly codes: AuthorizationCodeIssuerService,
    private readonly approved: ApprovedStatesService,
    private readonly env: Env,
    private readonly relay: RelayService,
  ) {
    this.polls = new PollLimiter(env.CODE_POLL_MIN_INTERVAL * 1000, env.STATE_TTL * 1000);
  }

  async config(clientId: string, query: unknown): Promise<HelperConfig> {
    const params = readOAuthParams(query);
    const client = await this.clients.findEnabled(clientId);
    if (!client) throw new OAuthError('invalid_client', 'unknown or disabled client', { status: 404 });
    if (!client.grants.includes('authorization_code')) throw new OAuthError('unauthorized_client', 'this client may not use authorization_code');
    const redirectUrl = allowedRedirectUrl(client, params.get('redirect_url'));
    const codeChallenge = pkceChallenge(params.get('code_challenge'), params.get('code_challenge_method'));
    // Its code could not be redeemed without one (AuthorizationCodeGrant): refused before anything is issued.
    if (!codeChallenge && isPublicClient(client)) throw invalidRequest('a public client must send a code_challenge (PKCE, code_challenge_method S256)');
    const state = await this.states.issue({ clientId: client.id, redirectUrl, codeChallenge });

    const authorize = new URL(`${this.env.frontendUrl}/sso/authorize`);
    authorize.search = new URLSearchParams({ response_type: 'code', client_id: client.id, state }).toString();
    const poll = new URL(`${this.env.apiUrl}/external/oauth2helper/code/get/${encodeURIComponent(client.id)}`);
    poll.search = new URLSearchParams({ state }).toString();
    return {
      authorize_url: authorize.href,
      code_url: poll.href,
      accesstoken_request_url: `${this.env.frontendUrl}/sso/token`,
      interval: this.env.CODE_POLL_MIN_INTERVAL,
      expires_in: this.env.STATE_TTL,
    };
  }

  /**
   * The code, exactly once; null before and after (a 404). Throws for a bad state (400) and when
   * polled too fast (429).
   */
  async poll(clientId: string, query: unknown, setRetryAfter: (seconds: number) => void, deadline: AnswerDeadline): Promise<string | null> {
    const params = readOAuthParams(query);
    let stateId: string;
    try {
      stateId = (await this.states.verify(params.get('state'), clientId)).jti;
    } catch (error) {
      if (!(error instanceof InvalidState)) throw error;
      // The helper flow's 404 for an unknown provider wins over the state's 400.
      if (!(await this.clients.findEnabled(clientId))) return null;
      throw invalidRequest(error.message);
    }
    const wait = this.polls.retryAfter(stateId);
    if (wait > 0) {
      setRetryAfter(wait);
      throw new OAuthError('slow_down', `poll at most every ${this.env.CODE_POLL_MIN_INTERVAL} seconds`, { status: 429 });
    }
    if (!this.approved.mayHaveCode(stateId)) return null;
    // The hand-over is spent by the commit: only the answer can deliver the code.
    const code = (await deadline.commit(() => this.codes.pickUp(stateId, clientId))) ?? (await this.pickUpRelayed(stateId, clientId, deadline));
    if (code) this.approved.forget(stateId);
    return code;
  }

  /** A link that ended at an identity provider: relayed (its code, once) or cancelled there (access_denied from now on). */
  private async pickUpRelayed(stateId: string, clientId: string, deadline: AnswerDeadline): Promise<string | null> {
    const code = await deadline.commit(() => this.relay.pickUp(stateId, clientId));
    if (code) return code;
    if (await this.codes.isDenied(stateId, clientId)) throw new OAuthError('access_denied', 'the user cancelled the sign-in at the identity provider');
    return null;
  }
}

function allowedRedirectUrl(client: ClientEntity, redirectUrl: string | undefined): string | undefined {
  if (redirectUrl === undefined) return undefined;
  try {
    const url = parseRedirectUrl(redirectUrl);
    if (!isRedirectAllowed(url, client.redirectPatterns)) throw invalidRequest('redirect_url is not registered for this client');
    return url.href;
  } catch (error) {
    if (error instanceof InvalidRedirectUrl) throw invalidRequest(`redirect_url ${error.message}`);
    throw error;
  }
}

/** RFC 7636 §4.3, S256 only: `plain` would let an intercepted challenge redeem the code. */
function pkceChallenge(challenge: string | undefined, method: string | undefined): string | undefined {
  if (challenge === undefined && method === undefined) return undefined;
  if (challenge === undefined) throw invalidRequest('code_challenge_method without code_challenge');
  if (method !== 'S256') throw invalidRequest('code_challenge_method must be S256');
  if (!S256_CHALLENGE.test(challenge)) throw invalidRequest('code_challenge must be a base64url SHA-256 digest (43 characters)');
  return challenge;
}
