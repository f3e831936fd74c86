import { Injectable } from '@nestjs/common';
import type { ClientEntity } from '../clients/client.entity.js';
import { ClientsService } from '../clients/clients.service.js';
import { randomToken, sha256 } from '../common/crypto/opaque-token.js';
import { csrfMatches, type HtmlPage } from '../common/html/html-reply.js';
import type { Requester } from '../common/http/requester.js';
import { SecurityEvents } from '../common/logging/security-events.js';
import { messagePage } from '../common/html/page-layout.js';
import { Metrics } from '../metrics/metrics.service.js';
import { LoginAttempts, signInRefusal } from '../oauth-helper/login-attempts.service.js';
import { waitInWords } from '../oauth-helper/wait-in-words.js';
import { DeviceCodesRepository } from '../token/device-codes.repository.js';
import { OAuthError } from '../token/oauth-error.js';
import { type OAuthParams, readOAuthParams } from '../token/oauth-params.js';
import { approvalPage, codeEntryPage, deviceSignInPage } from './device-pages.js';
import { normalizeUserCode } from './user-code.js';
import { UserCodeThrottle } from './user-code-throttle.service.js';

/** A user code that names a device authorization still waiting for its user. */
interface FoundRequest {
  userCode: string;
  client: ClientEntity;
  scope: string | null;
}

interface Submission {
  params: OAuthParams;
  csrfToken: string;
  requester: Requester;
}

const page = (status: number, html: string, retryAfter?: number): HtmlPage => ({ status, html, retryAfter });

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
      if (error instanceof OAuthError) return page(400, codeEntryPage({ csrfToken: csrf.fresh, error: 'The form was malformed. Enter the code again.' }));
      throw error;
    }
    const typed = params.get('user_code');
    if (!csrfMatches(csrf.cookie, params.get('csrf_token'))) {
      return page(403, codeEntryPage({ csrfToken: csrf.fresh, userCode: typed, error: 'This form expired. Please continue again.' }));
    }
    if (typed === undefined) return page(400, codeEntryPage({ csrfToken: csrf.fresh, error: 'Enter the code shown on your device.' }));

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
    if (!(await this.deviceCodes.signIn(found.userCode, attempt.user.id, attempt.user.tokensValidAfter, sha256(approvalNonce)))) return this.codeGone(csrfToken);
    const scopes = found.scope?.split(' ') ?? [];
    return page(200, approvalPage({ ...this.view(found, csrfToken), username: attempt.user.username, scopes, approvalNonce }));
  }

  /** Step 3: approve or deny, once. */
  private async decide(found: FoundRequest, { params, csrfToken, requester }: Submission): Promise<HtmlPage> {
    const decision = ({ approve: 'approved', deny: 'denied' } as const)[params.get('decision') as 'approve' | 'deny'];
    const nonce = params.get('approval');
    if (!decision || !nonce) return page(400, deviceSignInPage({ ...this.view(found, csrfToken), error: 'Please sign in again.' }));
    const decided = await this.deviceCodes.decide(found.userCode, sha256(nonce), decision);
    if (!decided) {
      // Still pending (it was just found), so this form is not the latest sign-in's.
      return page(403, deviceSignInPage({ ...this.view(found, csrfToken), error: 'This approval form expired. Please sign in again.' }));
    }
    this.metrics.deviceAuthorizations.inc({ event: decision });
    if (decision === 'denied') this.events.emit('device.denied', { reason: 'user_denied', clientId: found.client.id, userId: decided.userId }, requester);
    return decision === 'approved'
      ? page(200, messagePage('Device connected', `${found.client.name} is connected. Return to your device: it will finish by itself.`))
      : page(200, messagePage('Request denied', `${found.client.name} was not connected. You can close this page.`));
  }

  /** The request a typed code names, or the code form again: wrong, expired, or slowed down. */
  private async find(typed: string, address: string, csrfToken: string): Promise<FoundRequest | HtmlPage> {
    const wait = await this.throttle.reserve(address);
    if (wait > 0) {
      const error = `Too many wrong codes. Try again in ${waitInWords(wait)}.`;
      return page(429, codeEntryPage({ csrfToken, userCode: typed, error }), wait);
    }
    const userCode = normalizeUserCode(typed);
    const pending = userCode ? await this.deviceCodes.findPending(userCode) : null;
    const client = pending ? await this.clients.findEnabled(pending.clientId) : null;
    if (!userCode || !pending || !client) {
      return page(400, codeEntryPage({ csrfToken, userCode: typed, error: 'That code is wrong or has expired. Check the code on your device.' }));
    }
    await this.throttle.forgive(address);
    return { userCode, client, scope: pending.scope };
  }

  private codeGone(csrfToken: string): HtmlPage {
    return page(400, codeEntryPage({ csrfToken, error: 'That code has expired or was already used. Start again on your device.' }));
  }

  private view(found: FoundRequest, csrfToken: string) {
    return { userCode: found.userCode, clientName: found.client.name, csrfToken };
  }
}
