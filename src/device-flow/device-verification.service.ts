import { Injectable } from '@nestjs/common';
import type { ClientEntity } from '../clients/client.entity.js';
import { ClientsService } from '../clients/clients.service.js';
import { randomToken, sha256 } from '../common/crypto/opaque-token.js';
import { csrfMatches, csrfRefusal, type HtmlPage } from '../common/html/html-reply.js';
import type { Requester } from '../common/http/requester.js';
import { SecurityEvents } from '../common/logging/security-events.js';
import { Metrics } from '../metrics/metrics.service.js';
import { LoginAttempts, signInRefusal } from '../oauth-helper/login-attempts.service.js';
import { DeviceCodesRepository, type FoundDeviceCode } from '../token/device-codes.repository.js';
import { OAuthError } from '../token/oauth-error.js';
import { type OAuthParams, readOAuthParams } from '../token/oauth-params.js';
import { codeMessages, flawedCodeMessage } from './code-messages.js';
import { approvalPage, codeEntryPage, decidedPage, deviceSignInPage } from './device-pages.js';
import { normalizeUserCode, userCodeFlaw } from './user-code.js';
import { UserCodeThrottle } from './user-code-throttle.service.js';

/** A user code that names a device authorization still waiting for its user. */
interface FoundRequest {
  userCode: string;
  client: ClientEntity;
  scope: string | null;
  signedInUsername: string | null;
}

interface Submission {
  params: OAuthParams;
  csrfToken: string;
  requester: Requester;
}

const page = (status: number, html: string, retryAfter?: number): HtmlPage => ({ status, html, retryAfter });

/** Why a code that exists no longer waits for its user. */
function stateMessage(userCode: string, found: FoundDeviceCode): string {
  switch (found.state) {
    case 'approved':
      return codeMessages.approved(userCode);
    case 'denied':
      return codeMessages.denied(userCode);
    case 'cancelled':
      return codeMessages.cancelled(userCode, found.signedInUserDisabled);
    default:
      return codeMessages.expired(userCode);
  }
}

/**
 * The verification page of the device flow (RFC 8628 §3.3): the user enters the code their
 * device shows, signs in (the helper's users and slow-down), then approves or denies. Every step
 * looks the code up again, under the per-address slow-down of wrong codes.
 */
@Injectable()
export class DeviceVerificationService {
  constructor(
    private readonly deviceCodes: DeviceCodesRepository,
    private readonly clients: ClientsService,
    private readonly logins: LoginAttempts,
    private readonly throttle: UserCodeThrottle,
    private readonly metrics: Metrics,
    private readonly events: SecurityEvents,
  ) {}

  /** GET: the code form, pre-filled from `verification_uri_complete`; the user still confirms it. */
  show(query: unknown, csrfToken: string): HtmlPage {
    const typed = (query as Record<string, unknown> | undefined)?.user_code;
    const userCode = typeof typed === 'string' && typed.length <= 64 && !/\p{Cc}/u.test(typed) ? typed : undefined;
    return page(200, codeEntryPage({ csrfToken, userCode }));
  }

  async submit(body: unknown, csrf: { cookie?: string; fresh: string }, requester: Requester): Promise<HtmlPage> {
    let params: OAuthParams;
    try {
      params = readOAuthParams(body);
    } catch (error) {
      if (error instanceof OAuthError) return page(400, codeEntryPage({ csrfToken: csrf.fresh, error: codeMessages.malformedForm }));
      throw error;
    }
    const typed = params.get('user_code');
    if (!csrfMatches(csrf.cookie, params.get('csrf_token'))) {
      // Mostly a tab left open while another was used: what became of its code says more than the form's age.
      const found = typed === undefined ? undefined : await this.find(typed, requester.address, csrf.fresh);
      if (found && 'html' in found) return found;
      return page(403, codeEntryPage({ csrfToken: csrf.fresh, userCode: typed, error: `${csrfRefusal(csrf.cookie)} Please continue again.` }));
    }
    if (typed === undefined) return page(400, codeEntryPage({ csrfToken: csrf.fresh, error: codeMessages.missing }));

    const found = await this.find(typed, requester.address, csrf.fresh);
    if ('html' in found) return found;
    const submission = { params, csrfToken: csrf.fresh, requester };
    // Which form was sent, by its fields as sent: an empty field is absent from `params`.
    const sent = (name: string) => Object.hasOwn(body as object, name);
    if (sent('decision')) return this.decide(found, submission);
    if (sent('username') || sent('password')) return this.signIn(found, submission);
    return page(200, deviceSignInPage(this.view(found, csrf.fresh)));
  }

  /** Step 2 done: the approval form, which only this sign-in's value can submit. */
  private async signIn(found: FoundRequest, { params, csrfToken, requester }: Submission): Promise<HtmlPage> {
    const username = params.get('username');
    const password = params.get('password');
    if (!username || !password) return page(400, deviceSignInPage({ ...this.view(found, csrfToken), username, error: 'Enter your username and password.' }));
    const attempt = await this.logins.attempt(username, password, { clientId: found.client.id, requester });
    if (attempt.outcome !== 'signed-in') {
      const refusal = signInRefusal(attempt);
      return page(refusal.status, deviceSignInPage({ ...this.view(found, csrfToken), username, error: refusal.message }), refusal.retryAfter);
    }
    const approvalNonce = randomToken(32);
    if (!(await this.deviceCodes.signIn(found.userCode, attempt.user.id, attempt.user.tokensValidAfter, sha256(approvalNonce)))) {
      // Still waiting: the account was signed out or disabled since its password was checked.
      return (await this.whyNoLongerPending(found.userCode, csrfToken)) ?? page(400, deviceSignInPage({ ...this.view(found, csrfToken), username, error: 'Please sign in again.' }));
    }
    const scopes = found.scope?.split(' ') ?? [];
    const { scopeDescriptions } = found.client;
    return page(200, approvalPage({ ...this.view(found, csrfToken), username: attempt.user.username, scopes, scopeDescriptions, approvalNonce }));
  }

  /** Step 3: approve or deny, once. */
  private async decide(found: FoundRequest, { params, csrfToken, requester }: Submission): Promise<HtmlPage> {
    const decision = ({ approve: 'approved', deny: 'denied' } as const)[params.get('decision') as 'approve' | 'deny'];
    const nonce = params.get('approval');
    if (!decision || !nonce) return page(400, deviceSignInPage({ ...this.view(found, csrfToken), error: 'Please sign in again.' }));
    const decided = await this.deviceCodes.decide(found.userCode, sha256(nonce), decision);
    if (!decided) {
      // Still waiting, so this form is not the latest sign-in's.
      const error = 'This approval form was replaced by a later sign-in, perhaps in another tab. Decide there, or sign in again here.';
      return (await this.whyNoLongerPending(found.userCode, csrfToken)) ?? page(403, deviceSignInPage({ ...this.view(found, csrfToken), error }));
    }
    this.metrics.deviceAuthorizations.inc({ event: decision });
    if (decision === 'denied') this.events.emit('device.denied', { reason: 'user_denied', clientId: found.client.id, userId: decided.userId }, requester);
    // The form's one-time value is the latest sign-in's (a code with one always names its user), so that user decided.
    return page(200, decidedPage(decision, { clientName: found.client.name, username: found.signedInUsername! }));
  }

  /** The request a typed code names, or the code form again saying why not. */
  private async find(typed: string, address: string, csrfToken: string): Promise<FoundRequest | HtmlPage> {
    // What was typed stays for the user to correct; a code that has had its use does not invite another try.
    const refuse = (status: number, error: string, retryAfter?: number, keepTyped = true) =>
      page(status, codeEntryPage({ csrfToken, userCode: keepTyped ? typed : undefined, error }), retryAfter);
    // What cannot be a code is not a guess at one: refused without a query, and not counted.
    const flaw = userCodeFlaw(typed);
    if (flaw) return refuse(400, flawedCodeMessage(flaw));
    const wait = await this.throttle.reserve(address);
    if (wait > 0) return refuse(429, codeMessages.throttled(wait), wait);
    const userCode = normalizeUserCode(typed)!;
    const found = await this.deviceCodes.findByUserCode(userCode);
    if (!found) return refuse(400, codeMessages.unknown(userCode));
    // The client first: deleting one also cancels its codes, and "removed" is the reason to give.
    const client = await this.clients.find(found.clientId);
    if (!client) return refuse(400, codeMessages.clientDeleted(userCode));
    if (!client.enabled) return refuse(400, codeMessages.clientDisabled(userCode, client.name));
    if (found.state !== 'pending') return refuse(400, stateMessage(userCode, found), undefined, false);
    await this.throttle.forgive(address);
    return { userCode, client, scope: found.scope, signedInUsername: found.signedInUsername };
  }

  /** The code stopped waiting while this step ran (another tab decided, it expired, a sign-out voided it): why; null if it still waits. */
  private async whyNoLongerPending(userCode: string, csrfToken: string): Promise<HtmlPage | null> {
    const found = await this.deviceCodes.findByUserCode(userCode);
    if (found?.state === 'pending') return null;
    const error = found ? stateMessage(userCode, found) : codeMessages.expired(userCode);
    return page(400, codeEntryPage({ csrfToken, error }));
  }

  private view(found: FoundRequest, csrfToken: string) {
    return { userCode: found.userCode, clientName: found.client.name, csrfToken };
  }
}
