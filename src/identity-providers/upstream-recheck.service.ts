import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import * as oidc from 'openid-client';
import type { DataSource } from 'typeorm';
import { Env } from '../config/env.js';
import { IdentityProvidersService } from './identity-providers.service.js';
import { UpstreamClients } from './upstream-clients.service.js';
import { UpstreamFailure } from './upstream-failure.js';
import { sessionContext, UpstreamSessionsRepository } from './upstream-sessions.repository.js';
import { UpstreamVault } from './upstream-vault.js';

/** What the provider said of a brokered user at a refresh of their grant. */
export type RecheckOutcome =
  /** Still signed in there (or not due for a check, or nothing to check with). */
  | { outcome: 'confirmed' }
  /** The provider refused the user's refresh token (`invalid_grant`): the grant must end. */
  | { outcome: 'refused'; provider: string }
  /** The provider did not answer, or answered 5xx or a client error of its own: the grant stays as it is. */
  | { outcome: 'unreachable'; provider: string };

/**
 * Before a brokered grant is refreshed, the user is checked at their provider with the upstream
 * refresh token, at most every IDP_RECHECK_INTERVAL seconds. The session row is locked for the
 * call (bounded by IDP_HTTP_TIMEOUT_MS), so concurrent refreshes of one grant never present the
 * same upstream refresh token twice, which a provider that rotates them takes for theft.
 */
@Injectable()
export class UpstreamRecheck {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: UpstreamSessionsRepository,
    private readonly registry: IdentityProvidersService,
    private readonly upstream: UpstreamClients,
    private readonly vault: UpstreamVault,
    private readonly env: Env,
  ) {}

  check(grantId: string): Promise<RecheckOutcome> {
    return this.dataSource.transaction(async (manager): Promise<RecheckOutcome> => {
      const session = await this.sessions.lockOfGrant(manager, grantId, this.env.IDP_RECHECK_INTERVAL);
      if (!session?.due) return { outcome: 'confirmed' };
      const provider = await this.registry.find(session.provider);
      // Without the provider or its refresh token there is nothing to ask; the grant's own rules still hold.
      if (!provider || !session.refreshTokenSealed) {
        await this.sessions.checked(manager, session.id, null);
        return { outcome: 'confirmed' };
      }
      const refreshToken = this.vault.open(sessionContext(session.id), session.refreshTokenSealed);
      try {
        const tokens = await this.upstream.call(provider, (configuration) => oidc.refreshTokenGrant(configuration, refreshToken));
        const rotated = tokens.refresh_token && tokens.refresh_token !== refreshToken ? this.vault.seal(sessionContext(session.id), tokens.refresh_token) : null;
        await this.sessions.checked(manager, session.id, rotated);
        return { outcome: 'confirmed' };
      } catch (error) {
        if (!(error instanceof UpstreamFailure)) throw error;
        // Only invalid_grant speaks of the user; invalid_client (an expired secret) is the operator's to fix.
        if (error.kind === 'refused' && error.error === 'invalid_grant') return { outcome: 'refused', provider: provider.name };
        return { outcome: 'unreachable', provider: provider.name };
      }
    });
  }
}
