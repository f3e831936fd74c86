import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ClientEntity } from '../../clients/client.entity.js';
import { sha256 } from '../../common/crypto/opaque-token.js';
import type { AnswerDeadline } from '../../common/http/request-deadlines.js';
import type { Requester } from '../../common/http/requester.js';
import { SecurityEvents } from '../../common/logging/security-events.js';
import { Env } from '../../config/env.js';
import { GrantRevocationsService } from '../../grants/grant-revocations.service.js';
import { RefreshTokensRepository } from '../../grants/refresh-tokens.repository.js';
import { invalidGrant, OAuthError } from '../../oauth/oauth-error.js';
import { type RelayedTokenResponse, RelayService } from '../../identity-providers/relay/relay.service.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { UpstreamRecheckService } from '../../identity-providers/sign-in/upstream-recheck.service.js';
import { type OAuthParams, requireParam } from '../../oauth/oauth-params.js';
import { assertScopeAllowed, formatScope, parseScope } from '../../oauth/scope.js';
import { inTokenTransaction } from '../token-transaction.js';
import { UserTokenIssuerService, type UserTokenResponse } from '../user-token-issuer.service.js';
import type { GrantHandler } from './grant-handler.js';

/** RFC 6749 §6 with rotation and reuse detection (RFC 9700 §4.14.2). */
@Injectable()
export class RefreshTokenGrant implements GrantHandler<UserTokenResponse | RelayedTokenResponse> {
  readonly name = 'refresh_token';

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly revocations: GrantRevocationsService,
    private readonly tokens: UserTokenIssuerService,
    private readonly env: Env,
    private readonly events: SecurityEvents,
    private readonly upstream: UpstreamRecheckService,
    private readonly relay: RelayService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * A brokered grant's user is checked at their provider first: refused there, the grant is
   * revoked (its streams close) and the refresh is invalid_grant; the provider away, the refresh
   * is a 503 and nothing changes, so the device retries with the same token.
   */
  private async recheckUpstream(tokenHash: Buffer, client: ClientEntity, deadline: AnswerDeadline, requester: Requester): Promise<void> {
    const grant = await this.refreshTokens.usableGrant(this.dataSource.manager, tokenHash, client.id);
    if (!grant) return;
    const recheck = await this.upstream.check(grant.grant_id);
    this.metrics.upstreamRechecks.inc({ outcome: recheck.outcome });
    if (recheck.outcome === 'confirmed') return;
    if (recheck.outcome === 'busy') throw new OAuthError('temporarily_unavailable', "another refresh of this grant is checking the user at their identity provider: try again shortly");
    const failed = { provider: recheck.provider, clientId: client.id, userId: grant.user_id, grantId: grant.grant_id };
    if (recheck.outcome === 'unreachable') {
      this.events.emit('upstream.recheck_failed', { reason: 'unreachable', ...failed, grantRevoked: false }, requester);
      throw new OAuthError('temporarily_unavailable', 'the identity provider of this user could not be reached: try again shortly');
    }
    await inTokenTransaction(this.dataSource, deadline, async (manager, afterCommit) => {
      const revoked = await this.revocations.revoke(manager, { grantId: grant.grant_id });
      afterCommit(() => {
        this.events.emit('upstream.recheck_failed', { reason: 'invalid_grant', ...failed, grantRevoked: revoked.length > 0 }, requester);
      });
      return invalidGrant('the identity provider no longer accepts this user; the grant is revoked');
    });
  }

  async handle(params: OAuthParams, client: ClientEntity, deadline: AnswerDeadline, requester: Requester): Promise<UserTokenResponse | RelayedTokenResponse> {
    const tokenHash = sha256(requireParam(params, 'refresh_token'));
    const requestedScope = parseScope(params.get('scope'));
    if (!requestedScope) {
      const successor = this.tokens.newRefreshToken();
      // Whatever can fail is done before the token is retired, or in the statement that retires it
      // (the ID token's facts): a failure leaves it usable.
      const signing = await this.tokens.signing(client);
      const rotated = await deadline.commit(() =>
        this.refreshTokens.rotate(this.dataSource, {
          tokenHash,
          clientId: client.id,
          successorHash: successor.hash,
          successorLifetimeSeconds: successor.lifetimeSeconds,
          recheckIntervalSeconds: this.env.IDP_RECHECK_INTERVAL,
          address: requester.address,
        }),
      );
      if (rotated) {
        const grant = { grantId: rotated.grant_id, clientId: client.id, userId: rotated.user_id, scope: rotated.scope, flow: rotated.flow };
        return this.tokens.respond(grant, { refreshToken: successor, signing, facts: { ...rotated, alg: client.idTokenSignedResponseAlg } });
      }
    }
    // A relayed refresh token is the provider's: forwarded there with the service's credentials.
    const relayed = await this.relay.refresh(requireParam(params, 'refresh_token'), client.id, deadline);
    if (relayed) return relayed;
    await this.recheckUpstream(tokenHash, client, deadline, requester);
    // A narrowed scope, or a token that could not simply be rotated: decide under the row lock.
    return inTokenTransaction(this.dataSource, deadline, async (manager, afterCommit) => {
      const token = await this.refreshTokens.lock(manager, tokenHash, this.env.REFRESH_REUSE_GRACE);
      if (!token || token.client_id !== client.id) return invalidGrant('the refresh token is invalid');
      if (token.grant_revoked_at) return invalidGrant('the grant of this refresh token was revoked');
      if (token.rotated_at) {
        // Within the grace period the loser of a concurrent refresh is refused; later, reuse means theft.
        if (token.rotated_within_grace) return invalidGrant('the refresh token was already used');
        const revoked = await this.revocations.revoke(manager, { grantId: token.grant_id });
        afterCommit(() => {
          const reuse = { reason: 'refresh_token_reused', clientId: client.id, userId: token.user_id, grantId: token.grant_id, grantRevoked: revoked.length > 0 } as const;
          this.events.emit('token.replayed', reuse, requester);
        });
        return invalidGrant('the refresh token was already used; its grant is revoked');
      }
      if (token.expired) return invalidGrant('the refresh token has expired');
      if (!token.user_issuable) return invalidGrant('the user of this refresh token was signed out or disabled');
      // RFC 6749 §6: a refresh may narrow the grant's scope, never widen it (nor past what the client may still have).
      const grantScope = parseScope(token.current_scope ?? undefined) ?? [];
      assertScopeAllowed(requestedScope, grantScope);
      await this.refreshTokens.markRotated(manager, tokenHash, requester.address);
      return this.tokens.issue(manager, {
        grantId: token.grant_id,
        clientId: client.id,
        userId: token.user_id,
        scope: requestedScope ? formatScope(requestedScope) : token.current_scope,
        flow: token.flow,
      });
    });
  }
}
