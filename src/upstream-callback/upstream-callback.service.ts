import { Injectable } from '@nestjs/common';
import type { HtmlPage } from '../common/html/html-reply.js';
import { messagePage } from '../common/html/page-layout.js';
import type { AnswerDeadline } from '../common/http/request-deadlines.js';
import type { Requester } from '../common/http/requester.js';
import { SecurityEvents } from '../common/logging/security-events.js';
import { DeviceVerificationService } from '../device-flow/device-verification.service.js';
import { LoginService } from '../oauth-helper/login.service.js';
import type { AuthorizeOutcome } from '../oauth-helper/sign-in-links.service.js';
import { displayNameOf, type UpstreamProfile } from '../users/user.entity.js';
import { UsersService } from '../users/users.service.js';
import { type CallbackResult, UpstreamSignInService } from '../identity-providers/sign-in/upstream-sign-in.service.js';
import { sessionContext, UpstreamSessionsRepository } from '../identity-providers/sign-in/upstream-sessions.repository.js';
import type { SignInPurpose } from '../identity-providers/sign-in/upstream-sign-ins.repository.js';
import { UpstreamVaultService } from '../identity-providers/upstream-vault.service.js';
import { RelayService } from '../identity-providers/relay/relay.service.js';
import { SignInConfirmationsService } from '../identity-providers/sign-in/sign-in-confirmations.service.js';
import { ACCOUNT_DISABLED } from '../identity-providers/sign-in/sign-in-messages.js';
import { ClientsService } from '../clients/clients.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { issuedAfterStamp } from '../grants/revocations.js';
import { ENDED_SIGN_IN } from '../identity-providers/sign-in/ended-sign-in.js';

/**
 * What GET /sso/callback/NAME answers: a redirect, or a page; with a form, the device flow's
 * approval (with its CSRF cookie) or the helper link's confirmation (its one-time value is its token).
 */
export type CallbackAnswer = { kind: 'page'; page: HtmlPage; form?: 'device' | 'confirmation' } | { kind: 'redirect'; location: string };

const AGAIN = 'Start the sign-in again from your device.';
const pageOf = (status: number, title: string, message: string, retryAfter?: number, detail?: string): CallbackAnswer => ({
  kind: 'page',
  page: { status, html: messagePage(title, message, detail), retryAfter },
});

/** Why a callback was not this browser's to finish, for the user. */
const REFUSALS: Record<Extract<CallbackResult, { outcome: 'refused' }>['reason'], [string, string]> = {
  unknown_provider: ['This sign-in does not work', 'The answer is for an identity provider that is not registered here.'],
  no_state: ['This sign-in does not work', `The answer from the identity provider is incomplete. ${AGAIN}`],
  unknown: ['This sign-in does not work', `This answer was not started here, or is too old. ${AGAIN}`],
  used: ['This sign-in was already used', `This answer has already been used. If your device is not signed in, start the sign-in again from it.`],
  expired: ['This sign-in has expired', `The sign-in took longer than the device waits. ${AGAIN}`],
  other_browser: ['Finish in the browser where you started', 'This sign-in was started in another browser. Finish it there, or start the sign-in again from your device in this one.'],
};

/**
 * The provider sends the browser back here: the sign-in it started is taken once, checked, and
 * goes on as its purpose says (the helper's code, the device's approval form), or ends saying why.
 */
@Injectable()
export class UpstreamCallbackService {
  constructor(
    private readonly upstream: UpstreamSignInService,
    private readonly login: LoginService,
    private readonly verification: DeviceVerificationService,
    private readonly users: UsersService,
    private readonly sessions: UpstreamSessionsRepository,
    private readonly vault: UpstreamVaultService,
    private readonly events: SecurityEvents,
    private readonly relayed: RelayService,
    private readonly confirmations: SignInConfirmationsService,
    private readonly clients: ClientsService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * The request's deadline is held throughout: the browser's state is spent and what follows
   * committed only for this answer, never behind a 503; the provider's calls stop at the
   * deadline, which makes the answer the "could not be reached" page.
   */
  answer(name: string, query: URLSearchParams, browser: string | undefined, csrfToken: string, requester: Requester, deadline: AnswerDeadline): Promise<CallbackAnswer> {
    return deadline.commit(() => this.finish(name, query, browser, csrfToken, requester, deadline));
  }

  private async finish(name: string, query: URLSearchParams, browser: string | undefined, csrfToken: string, requester: Requester, deadline: AnswerDeadline): Promise<CallbackAnswer> {
    const result = await this.upstream.finish(name, query, browser, deadline);
    const provider = result.provider?.name ?? 'unknown';
    this.metrics.upstreamSignIns.inc({ provider, outcome: result.outcome === 'failed' ? result.failure.kind : result.outcome.replace('-', '_') });
    switch (result.outcome) {
      case 'refused': {
        this.events.emit('upstream.refused', { reason: result.reason, provider: result.provider?.name ?? name.slice(0, 63) }, requester);
        const [title, message] = REFUSALS[result.reason];
        return pageOf(400, title, message);
      }
      case 'failed': {
        const { provider, failure, purpose } = result;
        this.events.emit('upstream.failed', { reason: failure.kind, provider: provider.name, check: failure.message, clientId: purpose.clientId }, requester);
        if (failure.kind === 'unreachable') return pageOf(503, `${provider.displayName} is unavailable`, `${provider.displayName} could not be reached to finish the sign-in. ${AGAIN}`, 5);
        // The check that failed is for the administrator: in small print, under what the user can do.
        const message = `${provider.displayName}'s answer could not be verified, so nothing was signed in. ${AGAIN}`;
        return pageOf(400, 'The sign-in could not be completed', message, undefined, `What failed: ${failure.message}. If this happens again, tell your administrator.`);
      }
      case 'cancelled':
        this.events.emit('upstream.cancelled', { reason: 'provider_error', provider: result.provider.name, error: result.error, clientId: result.purpose.clientId }, requester);
        return this.cancel(result.purpose, csrfToken);
      case 'signed-in':
        // The client may have stopped signing in through this provider since the sign-in started.
        if (!(await this.clients.find(result.purpose.clientId))?.signIn.includes(result.provider.name)) {
          return pageOf(400, 'This sign-in does not work', `This application no longer signs in through ${result.provider.displayName}. ${AGAIN}`);
        }
        if (result.provider.mode === 'relay') return this.relay(result, csrfToken, requester);
        return this.broker(result, csrfToken, requester);
    }
  }

  private async cancel(purpose: SignInPurpose, csrfToken: string): Promise<CallbackAnswer> {
    if (purpose.kind === 'helper') return fromHelper(await this.login.cancelUpstream(purpose.state, purpose.clientId));
    return { kind: 'page', page: await this.verification.upstreamCancelled(purpose.userCode, csrfToken), form: 'device' };
  }

  /** Relay mode: the provider's own tokens wait, sealed, for the user's confirmation (helper) or approval (device), then for the device. */
  private async relay({ provider, purpose, identity, stateHash }: SignedIn, csrfToken: string, requester: Requester): Promise<CallbackAnswer> {
    this.events.emit('upstream.signed_in', { reason: 'relay', provider: provider.name, clientId: purpose.clientId, userId: null }, requester);
    if (purpose.kind === 'helper') {
      const hold = () => this.confirmations.hold(stateHash, { mode: 'relay', tokens: identity.tokens });
      return fromHelper(await this.login.awaitConfirmation(purpose.state, purpose.clientId, { providerName: provider.displayName }, hold), 'confirmation');
    }
    const page = await this.verification.upstreamRelayed(
      purpose.userCode,
      provider.displayName,
      (approvalNonceHash) => this.relayed.handOverToDevice(provider, purpose.userCode, identity.tokens, approvalNonceHash),
      csrfToken,
      requester,
    );
    return { kind: 'page', page, form: 'device' };
  }

  /** Broker mode: the linked portal user goes on as after a local sign-in, with the service's own tokens. */
  private async broker({ provider, purpose, identity, stateHash, startedAt }: SignedIn, csrfToken: string, requester: Requester): Promise<CallbackAnswer> {
    const user = await this.users.linkUpstream(provider, identity.claims.sub, profileOf(identity.claims));
    if (user.disabledAt) return pageOf(403, ACCOUNT_DISABLED.title, ACCOUNT_DISABLED.message);
    // Signed out while at the provider: the stamp read here is what every later step compares with.
    if (!issuedAfterStamp(startedAt, user.tokensValidAfter)) return pageOf(400, ENDED_SIGN_IN.title, ENDED_SIGN_IN.message);
    const refreshToken = identity.tokens.refresh_token;
    const sessionId = await this.sessions.create(provider.name, user.id, (id) => (refreshToken ? this.vault.seal(sessionContext(id), refreshToken) : null));
    this.events.emit('upstream.signed_in', { reason: 'broker', provider: provider.name, clientId: purpose.clientId, userId: user.id }, requester);
    if (purpose.kind === 'helper') {
      const hold = () => this.confirmations.hold(stateHash, { mode: 'broker', userId: user.id, upstreamSessionId: sessionId });
      return fromHelper(await this.login.awaitConfirmation(purpose.state, purpose.clientId, { providerName: provider.displayName, username: displayNameOf(user) }, hold), 'confirmation');
    }
    // The sign-in begins a browser session: the page carries its cookie, which sendDevicePage sets.
    return { kind: 'page', page: await this.verification.upstreamSignedIn(purpose.userCode, user, sessionId, csrfToken, requester), form: 'device' };
  }
}

type SignedIn = Extract<CallbackResult, { outcome: 'signed-in' }>;

const fromHelper = (outcome: AuthorizeOutcome, form?: 'confirmation'): CallbackAnswer => (outcome.kind === 'redirect' ? outcome : { kind: 'page', page: outcome, form });

/** The profile claims kept on a brokered user, each only when it has the type the standard gives it. */
function profileOf(claims: Record<string, unknown>): UpstreamProfile {
  const text = (value: unknown) => (typeof value === 'string' && value.length > 0 && value.length <= 256 && !/[\u0000-\u001f\u007f]/.test(value) ? value : undefined);
  const profile: UpstreamProfile = {
    preferred_username: text(claims.preferred_username),
    name: text(claims.name),
    email: text(claims.email),
    email_verified: typeof claims.email_verified === 'boolean' ? claims.email_verified : undefined,
  };
  return Object.fromEntries(Object.entries(profile).filter(([, value]) => value !== undefined));
}
