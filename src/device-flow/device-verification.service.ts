import { Injectable } from '@nestjs/common';
import type { ClientEntity } from '../clients/client.entity.js';
import { ClientsService } from '../clients/clients.service.js';
import { randomToken, sha256 } from '../common/crypto/opaque-token.js';
import { csrfMatches, csrfRefusal, type HtmlPage } from '../common/html/html-reply.js';
import type { Requester } from '../common/http/requester.js';
import { SecurityEvents } from '../common/logging/security-events.js';
import { admitsUser, type SignInChoice, SignInMethodsService, onlyProvider } from '../identity-providers/sign-in-methods.service.js';
import { NOT_OFFERED, providersOnly, providerUnavailable } from '../identity-providers/sign-in/sign-in-messages.js';
import { UpstreamFailure } from '../identity-providers/upstream-failure.js';
import { UpstreamSignInService } from '../identity-providers/sign-in/upstream-sign-in.service.js';
import { messagePage } from '../common/html/page-layout.js';
import { displayNameOf, type UserEntity } from '../users/user.entity.js';
import { UsersService } from '../users/users.service.js';
import { Env } from '../config/env.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { LoginAttemptsService, signInRefusal } from '../oauth-helper/login-attempts.service.js';
import { type BrowserSession, BrowserSessionsRepository } from '../sessions/browser-sessions.repository.js';
import { DeviceCodesRepository, type DeviceSignIn, type FoundDeviceCode } from '../codes/device-codes.repository.js';
import { OAuthError } from '../oauth/oauth-error.js';
import { type OAuthParams, readOAuthParams } from '../oauth/oauth-params.js';
import { codeMessages, flawedCodeMessage } from './code-messages.js';
import { approvalPage, codeEntryPage, continueAsPage, decidedPage, deviceSignInPage } from './device-pages.js';
import { normalizeUserCode, userCodeFlaw } from './user-code.js';
import { UserCodeThrottleService } from './user-code-throttle.service.js';

/** A user code that names a device authorization still waiting for its user. */
interface FoundRequest {
  userCode: string;
  client: ClientEntity;
  scope: string | null;
  signedInUsername: string | null;
  expiresAt: Date;
  methods: SignInChoice;
}

/** A page of the verification flow; `startedSession`: a sign-in on it began a browser session, whose cookie goes with the page. */
export type DevicePage = HtmlPage & { startedSession?: { secret: string; lifetimeSeconds: number } };

/** What a step of the verification page answers: a page, or the browser sent to an identity provider. */
export type VerificationOutcome = DevicePage | { location: string };

/** What the verification page knows of the browser. */
export interface VerificationBrowser {
  /** Its binding cookie, issued on first use: only a sign-in at a provider needs one. */
  bind(): string;
  /** Its session cookie's value, if any. */
  session: string | undefined;
}

/** The user of a live browser session, with the sign-in that began it. */
interface SignedInSession {
  session: BrowserSession;
  user: UserEntity;
}

/** The sign-in behind an approval form: its browser session's (begun by it, or continued). */
type ApprovalSignIn = DeviceSignIn & { upstreamSessionId: string | null };

/** Whether a client takes this user: a local one when it signs in locally, a brokered one when through their provider. */

const SESSION_ENDED = 'Your sign-in here has ended. Please sign in again.';

interface Submission {
  params: OAuthParams;
  csrfToken: string;
  requester: Requester;
}

const page = (status: number, html: string, retryAfter?: number): HtmlPage => ({ status, html, retryAfter });

/** Why a code that exists no longer waits for its user: an approval is good news (a notice), the rest an error. */
function stateMessage(userCode: string, found: FoundDeviceCode): { error: string } | { notice: string } {
  switch (found.state) {
    case 'approved':
      return { notice: codeMessages.approved(userCode) };
    case 'denied':
      return { error: codeMessages.denied(userCode) };
    case 'cancelled':
      return { error: codeMessages.cancelled(userCode, found.signedInUserDisabled) };
    default:
      return { error: codeMessages.expired(userCode) };
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
    private readonly logins: LoginAttemptsService,
    private readonly throttle: UserCodeThrottleService,
    private readonly metrics: MetricsService,
    private readonly events: SecurityEvents,
    private readonly methods: SignInMethodsService,
    private readonly upstream: UpstreamSignInService,
    private readonly sessions: BrowserSessionsRepository,
    private readonly users: UsersService,
    private readonly env: Env,
  ) {}

  /** GET: the code form, pre-filled from `verification_uri_complete`; the user still confirms it. */
  show(query: unknown, csrfToken: string): Promise<HtmlPage> {
    const typed = (query as Record<string, unknown> | undefined)?.user_code;
    const userCode = typeof typed === 'string' && typed.length <= 64 && !/\p{Cc}/u.test(typed) ? typed : undefined;
    return this.codeForm(200, { csrfToken, userCode });
  }

  async submit(body: unknown, csrf: { cookie?: string; fresh: string }, requester: Requester, browser: VerificationBrowser): Promise<VerificationOutcome> {
    let params: OAuthParams;
    try {
      params = readOAuthParams(body);
    } catch (error) {
      if (error instanceof OAuthError) return this.codeForm(400, { csrfToken: csrf.fresh, error: codeMessages.malformedForm });
      throw error;
    }
    const typed = params.get('user_code');
    if (!csrfMatches(csrf.cookie, params.get('csrf_token'))) {
      // Mostly a tab left open while another was used: what became of its code says more than the form's age.
      const found = typed === undefined ? undefined : await this.find(typed, requester.address, csrf.fresh);
      if (found && 'html' in found) return found;
      return this.codeForm(403, { csrfToken: csrf.fresh, userCode: typed, error: `${csrfRefusal(csrf.cookie)} Please continue again.` });
    }
    if (typed === undefined) return this.codeForm(400, { csrfToken: csrf.fresh, error: codeMessages.missing });

    const found = await this.find(typed, requester.address, csrf.fresh);
    if ('html' in found) return found;
    const submission = { params, csrfToken: csrf.fresh, requester };
    // Which form was sent, by its fields as sent: an empty field is absent from `params`.
    const sent = (name: string) => Object.hasOwn(body as object, name);
    if (sent('decision')) return this.decide(found, submission);
    if (sent('session')) return params.get('session') === 'another' ? this.signInStep(found, csrf.fresh, browser) : this.continueSession(found, csrf.fresh, browser);
    if (sent('idp')) return this.toProvider(found, params.get('idp') ?? '', csrf.fresh, browser);
    if (sent('username') || sent('password')) return this.signIn(found, submission);
    // Someone may have sent the code: a session's user is asked, never taken silently.
    const signedIn = await this.sessionOf(found, browser.session);
    return signedIn ? this.continueAs(found, signedIn, csrf.fresh) : this.signInStep(found, csrf.fresh, browser);
  }

  /**
   * A sign-in at a provider came back for this code (GET /sso/callback/NAME): the brokered user
   * goes on to the approval form, as after a local sign-in, and their sign-in begins a browser
   * session (the page carries its cookie).
   */
  async upstreamSignedIn(typedCode: string, user: UserEntity, upstreamSessionId: string | null, csrfToken: string, requester: Requester): Promise<DevicePage> {
    const found = await this.find(typedCode, requester.address, csrfToken);
    if ('html' in found) return found;
    return this.signedIn(found, user, upstreamSessionId, csrfToken);
  }

  /**
   * Relay mode: the provider's tokens wait, and the user approves or denies on the same form as
   * after any sign-in (RFC 8628 §5.4: they see which client asks, for what, with which code).
   * `handOver` keeps the tokens for the form's one-time value; false: the code no longer waited.
   */
  async upstreamRelayed(typedCode: string, providerName: string, handOver: (approvalNonceHash: Buffer) => Promise<boolean>, csrfToken: string, requester: Requester): Promise<HtmlPage> {
    const found = await this.find(typedCode, requester.address, csrfToken);
    if ('html' in found) return found;
    const approvalNonce = randomToken(32);
    if (!(await handOver(sha256(approvalNonce)))) return (await this.whyNoLongerPending(found.userCode, csrfToken)) ?? this.signInPage(found, csrfToken, 400, 'Please sign in again.');
    const scopes = found.scope?.split(' ') ?? [];
    return page(200, approvalPage({ ...this.view(found, csrfToken), scopes, scopeDescriptions: found.client.scopeDescriptions, approvalNonce, providerName }));
  }

  /** The sign-in was cancelled at the provider: the device's poll is answered access_denied. */
  async upstreamCancelled(userCode: string, csrfToken: string): Promise<HtmlPage> {
    const denied = await this.deviceCodes.denyPending(userCode);
    if (!denied) return (await this.whyNoLongerPending(userCode, csrfToken)) ?? this.codeForm(400, { csrfToken, error: codeMessages.expired(userCode) });
    this.metrics.deviceAuthorizations.inc({ event: 'denied' });
    return page(200, messagePage('Sign-in cancelled', 'The device was not connected. It will tell you the sign-in was cancelled; you can close this page.'));
  }

  /** The sign-in itself: a client that signs in through one provider only has nothing to choose (straight there); else the form. */
  private signInStep(found: FoundRequest, csrfToken: string, browser: VerificationBrowser): Promise<VerificationOutcome> {
    const provider = onlyProvider(found.methods);
    return provider ? this.toProvider(found, provider.name, csrfToken, browser) : this.signInPage(found, csrfToken, 200);
  }

  /**
   * The browser's live session, when the client takes its user (the session of a local user is
   * no way into a client that signs in through a provider only, nor one of a provider's users
   * into a client that does not use that provider).
   */
  private async sessionOf(found: FoundRequest, cookie: string | undefined): Promise<SignedInSession | undefined> {
    const session = await this.sessions.find(cookie);
    if (!session) return undefined;
    const user = await this.users.findById(session.user.id);
    return user && admitsUser(found.methods, user) ? { session, user } : undefined;
  }

  /** "Continue as USER" or "Use another account", in place of the sign-in. */
  private async continueAs(found: FoundRequest, { user }: SignedInSession, csrfToken: string): Promise<HtmlPage> {
    const html = continueAsPage({ ...this.view(found, csrfToken), username: displayNameOf(user), providerName: this.providerNameOf(found, user) });
    // "Use another account" may lead to the client's only provider.
    return { ...page(200, html), formTargets: found.methods.providers.length > 0 ? await this.methods.formTargets() : [] };
  }

  /** "Continue as USER" pressed: the approval form, for the session's user (the session may have ended since the page was shown). */
  private async continueSession(found: FoundRequest, csrfToken: string, browser: VerificationBrowser): Promise<HtmlPage> {
    const signedIn = await this.sessionOf(found, browser.session);
    if (!signedIn) return this.signInPage(found, csrfToken, 400, SESSION_ENDED);
    return this.approvalFor(found, signedIn.user, signedIn.session, csrfToken);
  }

  /** The round trip to a provider the client signs in with: a redirect there, or the sign-in form again saying why not. */
  private async toProvider(found: FoundRequest, name: string, csrfToken: string, browser: VerificationBrowser): Promise<VerificationOutcome> {
    const provider = found.methods.providers.find((candidate) => candidate.name === name);
    if (!provider) return this.signInPage(found, csrfToken, 400, NOT_OFFERED);
    try {
      return { location: await this.upstream.start(provider, { kind: 'device', userCode: found.userCode, clientId: found.client.id }, browser.bind(), found.expiresAt) };
    } catch (error) {
      if (!(error instanceof UpstreamFailure)) throw error;
      const { retryAfter, title, message } = providerUnavailable(provider);
      return page(503, messagePage(title, message), retryAfter);
    }
  }

  private async signInPage(found: FoundRequest, csrfToken: string, status: number, error?: string, username?: string, retryAfter?: number): Promise<HtmlPage> {
    const { local, providers } = found.methods;
    const html = deviceSignInPage({ ...this.view(found, csrfToken), username, error, local, providers });
    return { status, html, retryAfter, formTargets: providers.length > 0 ? await this.methods.formTargets() : [] };
  }

  /** Step 2 done: the approval form, which only this sign-in's value can submit. */
  private async signIn(found: FoundRequest, { params, csrfToken, requester }: Submission): Promise<DevicePage> {
    const username = params.get('username');
    const password = params.get('password');
    if (!found.methods.local) return this.signInPage(found, csrfToken, 400, providersOnly(found.client.name, found.methods.providers));
    if (!username || !password) return this.signInPage(found, csrfToken, 400, 'Enter your username and password.', username);
    const attempt = await this.logins.attempt(username, password, { clientId: found.client.id, requester });
    if (attempt.outcome !== 'signed-in') {
      const refusal = signInRefusal(attempt);
      return this.signInPage(found, csrfToken, refusal.status, refusal.message, username, refusal.retryAfter);
    }
    return this.signedIn(found, attempt.user, null, csrfToken, username);
  }

  /** A sign-in here (a password, or a provider's in broker mode) begins a browser session, within which the approval form follows. */
  private async signedIn(found: FoundRequest, user: UserEntity, upstreamSessionId: string | null, csrfToken: string, username?: string): Promise<DevicePage> {
    const started = await this.sessions.start(user, upstreamSessionId);
    // Signed out or disabled since the sign-in was checked: no session, and no approval form.
    if (!started) return (await this.whyNoLongerPending(found.userCode, csrfToken)) ?? this.signInPage(found, csrfToken, 400, 'Please sign in again.', username);
    const approval = await this.approvalFor(found, user, started.session, csrfToken, username);
    return { ...approval, startedSession: { secret: started.secret, lifetimeSeconds: this.env.SESSION_TTL } };
  }

  /**
   * The approval form for a user signed in within `signIn`'s browser session (begun here or at a
   * provider, or continued), which only this sign-in's value can submit; the session's sign-in
   * goes with the approval, for the grant's ID tokens.
   */
  private async approvalFor(found: FoundRequest, user: UserEntity, signIn: ApprovalSignIn, csrfToken: string, username?: string): Promise<HtmlPage> {
    const approvalNonce = randomToken(32);
    const { authTime, sid, upstreamSessionId } = signIn;
    if (!(await this.deviceCodes.signIn(found.userCode, user.id, user.tokensValidAfter, sha256(approvalNonce), upstreamSessionId, { authTime, sid }))) {
      // Still waiting: the account was signed out or disabled since its password was checked.
      return (await this.whyNoLongerPending(found.userCode, csrfToken)) ?? this.signInPage(found, csrfToken, 400, 'Please sign in again.', username);
    }
    const scopes = found.scope?.split(' ') ?? [];
    const { scopeDescriptions } = found.client;
    return page(200, approvalPage({ ...this.view(found, csrfToken), username: displayNameOf(user), scopes, scopeDescriptions, approvalNonce, providerName: this.providerNameOf(found, user) }));
  }

  /** Two providers may each have an alice: the one a brokered user signs in with, by its display name. */
  private providerNameOf(found: FoundRequest, user: UserEntity): string | undefined {
    return user.provider ? (found.methods.providers.find((provider) => provider.name === user.provider)?.displayName ?? user.provider) : undefined;
  }

  /** Step 3: approve or deny, once. */
  private async decide(found: FoundRequest, { params, csrfToken, requester }: Submission): Promise<HtmlPage> {
    const decision = ({ approve: 'approved', deny: 'denied' } as const)[params.get('decision') as 'approve' | 'deny'];
    const nonce = params.get('approval');
    if (!decision || !nonce) return this.signInPage(found, csrfToken, 400, 'Please sign in again.');
    const decided = await this.deviceCodes.decide(found.userCode, sha256(nonce), decision);
    if (!decided) {
      // Still waiting, so this form is not the latest sign-in's.
      const error = 'This approval form was replaced by a later sign-in, perhaps in another tab. Decide there, or sign in again here.';
      return (await this.whyNoLongerPending(found.userCode, csrfToken)) ?? this.signInPage(found, csrfToken, 403, error);
    }
    this.metrics.deviceAuthorizations.inc({ event: decision });
    if (decision === 'denied') this.events.emit('device.denied', { reason: 'user_denied', clientId: found.client.id, userId: decided.userId }, requester);
    // The form's one-time value is the latest sign-in's: its user decided (none for a relayed sign-in, whose account stays the provider's).
    return page(200, decidedPage(decision, { clientName: found.client.name, username: found.signedInUsername }));
  }

  /** The request a typed code names, or the code form again saying why not. */
  private async find(typed: string, address: string, csrfToken: string): Promise<FoundRequest | HtmlPage> {
    // What was typed stays for the user to correct; a code that has had its use does not invite another try.
    const refuse = (status: number, error: string, retryAfter?: number, keepTyped = true) =>
      this.codeForm(status, { csrfToken, userCode: keepTyped ? typed : undefined, error }, retryAfter);
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
    if (found.state !== 'pending') return this.codeForm(400, { csrfToken, ...stateMessage(userCode, found) });
    await this.throttle.forgive(address);
    const methods = await this.methods.of(client);
    // Only when its one provider was deleted meanwhile (idp:delete checks, but not under the client's lock).
    if (!methods.local && methods.providers.length === 0) return refuse(400, `${client.name} has no way to sign in set up right now. Ask the administrator of this service.`);
    return { userCode, client, scope: found.scope, signedInUsername: found.signedInUsername, expiresAt: found.expiresAt, methods };
  }

  /** The code stopped waiting while this step ran (another tab decided, it expired, a sign-out voided it): why; null if it still waits. */
  private async whyNoLongerPending(userCode: string, csrfToken: string): Promise<HtmlPage | null> {
    const found = await this.deviceCodes.findByUserCode(userCode);
    if (found?.state === 'pending') return null;
    return this.codeForm(400, { csrfToken, ...(found ? stateMessage(userCode, found) : { error: codeMessages.expired(userCode) }) });
  }

  /**
   * The code form. Its submit is answered by a redirect to the provider when the code's client
   * signs in through one provider only, and Chrome applies form-action to that redirect: the
   * providers' origins are allowed.
   */
  private async codeForm(status: number, view: Parameters<typeof codeEntryPage>[0], retryAfter?: number): Promise<HtmlPage> {
    return { ...page(status, codeEntryPage(view), retryAfter), formTargets: await this.methods.formTargets() };
  }

  private view(found: FoundRequest, csrfToken: string) {
    return { userCode: found.userCode, clientName: found.client.name, csrfToken };
  }
}
