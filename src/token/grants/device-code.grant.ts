import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { type ClientEntity, DEVICE_CODE_GRANT } from '../../clients/client.entity.js';
import { sha256 } from '../../common/crypto/opaque-token.js';
import type { AnswerDeadline } from '../../common/http/request-deadlines.js';
import type { Requester } from '../../common/http/requester.js';
import { GrantsRepository } from '../../grants/grants.repository.js';
import { RelayHandOversRepository } from '../../identity-providers/relay/relay-hand-overs.repository.js';
import { type RelayedTokenResponse, RelayService } from '../../identity-providers/relay/relay.service.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { DeviceCodesRepository, type PollOutcome, SLOW_DOWN_STEP_SECONDS } from '../../codes/device-codes.repository.js';
import { OAuthError, type OAuthErrorCode } from '../../oauth/oauth-error.js';
import { type OAuthParams, requireParam } from '../../oauth/oauth-params.js';
import { inTokenTransaction } from '../token-transaction.js';
import { UserTokenIssuerService, type UserTokenResponse } from '../user-token-issuer.service.js';
import type { GrantHandler } from './grant-handler.js';

/** RFC 8628 §3.5: what a poll that brings no token answers. */
const POLL_ERRORS: Record<Exclude<PollOutcome['outcome'], 'approved' | 'relayed'>, [OAuthErrorCode, string]> = {
  pending: ['authorization_pending', 'the user has not finished yet; poll again after the interval'],
  slow_down: ['slow_down', `polled faster than the interval; the interval is now ${SLOW_DOWN_STEP_SECONDS} seconds longer`],
  denied: ['access_denied', 'the user denied the authorization'],
  expired: ['expired_token', 'the device code has expired; start a new device authorization'],
  invalid: ['invalid_grant', 'the device code is invalid'],
};

/**
 * RFC 8628 §3.4: the device polls with its device code. Each poll is judged and recorded in the
 * same transaction that, once the user approved, creates the grant and its tokens, so an
 * approval yields tokens exactly once.
 */
@Injectable()
export class DeviceCodeGrant implements GrantHandler<UserTokenResponse | RelayedTokenResponse> {
  readonly name = DEVICE_CODE_GRANT;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly deviceCodes: DeviceCodesRepository,
    private readonly grants: GrantsRepository,
    private readonly tokens: UserTokenIssuerService,
    private readonly metrics: MetricsService,
    private readonly handOvers: RelayHandOversRepository,
    private readonly relay: RelayService,
  ) {}

  async handle(params: OAuthParams, client: ClientEntity, deadline: AnswerDeadline, requester: Requester): Promise<UserTokenResponse | RelayedTokenResponse> {
    const deviceCodeHash = sha256(requireParam(params, 'device_code'));
    try {
      const response = await inTokenTransaction(this.dataSource, deadline, async (manager) => {
        const poll = await this.deviceCodes.poll(manager, deviceCodeHash, client.id);
        // Returned, not thrown: the poll's time (and a grown interval) must commit.
        if (poll.outcome === 'relayed') {
          const taken = await this.handOvers.collect(manager, deviceCodeHash);
          return taken ? this.relay.deliver(manager, taken, client.id) : new OAuthError(...POLL_ERRORS.invalid);
        }
        if (poll.outcome !== 'approved') return new OAuthError(...POLL_ERRORS[poll.outcome]);
        const grant = { clientId: client.id, userId: poll.userId, scope: poll.scope, flow: 'device' as const, upstreamSessionId: poll.upstreamSessionId };
        // The ID tokens' auth_time and sid: the sign-in behind the approval, not the poll.
        const grantId = await this.grants.create(manager, { ...grant, signIn: poll.signIn ?? undefined, address: requester.address });
        return this.tokens.issue(manager, { ...grant, grantId }, { withRefreshToken: client.grants.includes('refresh_token') });
      });
      this.metrics.devicePolls.inc({ outcome: 'approved' });
      return response;
    } catch (error) {
      // Counted once the poll is recorded: an OAuth error here is the poll's answer.
      if (error instanceof OAuthError) this.metrics.devicePolls.inc({ outcome: error.error });
      throw error;
    }
  }
}
