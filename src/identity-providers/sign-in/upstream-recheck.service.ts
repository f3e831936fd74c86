import { Injectable } from '@nestjs/common';
import * as oidc from 'openid-client';
import { Env } from '../../config/env.js';
import { IdentityProvidersService } from '../identity-providers.service.js';
import { UpstreamClientsService } from '../upstream-clients.service.js';
import { UpstreamFailure } from '../upstream-failure.js';
import { sessionContext, type UpstreamSession, UpstreamSessionsRepository } from './upstream-sessions.repository.js';
import { UpstreamVaultService } from '../upstream-vault.service.js';

/** What the provider said of a brokered user at a refresh of their grant. */
export type RecheckOutcome =
  /** Still signed in there (or not due for a check, or nothing to check with). */
  | { outcome: 'confirmed' }
  /** The provider refused the user's refresh token (`invalid_grant`): the grant must end. */
  | { outcome: 'refused'; provider: string }
  /** The provider did not answer, or answered 5xx or a client error of its own: the grant stays as it is. */
  | { outcome: 'unreachable'; provider: string }
  /** Another refresh of the grant is asking the provider right now: this one is to try again shortly. */
  | { outcome: 'busy' };

/**
 * Before a brokered grant is refreshed, the user is checked at their provider with the upstream
 * refresh token, at most every IDP_RECHECK_INTERVAL seconds. The session is leased for the call
 * (no transaction or row lock is held while the provider answers), so concurrent refreshes of one
 * grant never present the same upstream refresh token twice, which a provider that rotates them
 * takes for theft: a refresh arriving meanwhile is told to try again (503).
 */
@Injectable()
export class UpstreamRecheckService {
  constructor(
    private readonly sessions: UpstreamSessionsRepository,
    private readonly registry: IdentityProvidersService,
    private readonly upstream: UpstreamClientsService,
    private readonly vault: UpstreamVaultService,
    private readonly env: Env,
  ) {}

  async check(grantId: string): Promise<RecheckOutcome> {
    const session = await this.sessions.leaseDue(grantId, this.env.IDP_RECHECK_INTERVAL, this.upstream.callLeaseSeconds);
    if (session === undefined) return { outcome: 'confirmed' };
    if (session === 'busy') return { outcome: 'busy' };
    let answer: { outcome: RecheckOutcome; rotated: Buffer | null } | undefined;
    try {
      answer = await this.ask(session);
      return answer.outcome;
    } finally {
      await this.sessions.release(session.id, answer?.outcome.outcome === 'confirmed' ? { refreshTokenSealed: answer.rotated } : null);
    }
  }

  /** What the provider says of the session's user, and its rotated refresh token (sealed) when it gave one. */
  private async ask({ id, provider: name, refreshTokenSealed }: UpstreamSession): Promise<{ outcome: RecheckOutcome; rotated: Buffer | null }> {
    const provider = await this.registry.find(name);
    // Without the provider or its refresh token there is nothing to ask; the grant's own rules still hold.
    if (!provider || !refreshTokenSealed) return { outcome: { outcome: 'confirmed' }, rotated: null };
    const refreshToken = this.vault.open(sessionContext(id), refreshTokenSealed);
    try {
      const tokens = await this.upstream.call(provider, (configuration) => oidc.refreshTokenGrant(configuration, refreshToken));
      const rotated = tokens.refresh_token && tokens.refresh_token !== refreshToken ? this.vault.seal(sessionContext(id), tokens.refresh_token) : null;
      return { outcome: { outcome: 'confirmed' }, rotated };
    } catch (error) {
      if (!(error instanceof UpstreamFailure)) throw error;
      // Only invalid_grant speaks of the user; invalid_client (an expired secret) is the operator's to fix.
      if (error.kind === 'refused' && error.error === 'invalid_grant') return { outcome: { outcome: 'refused', provider: provider.name }, rotated: null };
      return { outcome: { outcome: 'unreachable', provider: provider.name }, rotated: null };
    }
  }
}
