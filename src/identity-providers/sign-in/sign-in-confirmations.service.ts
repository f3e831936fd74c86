import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type * as oidc from 'openid-client';
import { randomToken, sha256 } from '../../common/crypto/opaque-token.js';
import { issuedAfterStampSql } from '../../grants/revocations.js';
import type { IdentityProviderEntity } from '../identity-provider.entity.js';
import { IdentityProvidersService } from '../identity-providers.service.js';
import { UpstreamVaultService } from '../upstream-vault.service.js';

/** What a provider sign-in for a helper link leads to, once the user continues. */
export type HeldOutcome =
  /** Broker mode: the linked portal user, and the upstream session its grant will re-check. */
  | { mode: 'broker'; userId: string; upstreamSessionId: string | null }
  /** Relay mode: the provider's token response, for the device. */
  | { mode: 'relay'; tokens: oidc.TokenEndpointResponse };

/**
 * A held outcome taken for the user's "Continue". A brokered one carries its user's stamp as read
 * with it, for the approval to compare against (never read again after the check).
 */
export type ConfirmedSignIn = (Extract<HeldOutcome, { mode: 'relay' }> | (Extract<HeldOutcome, { mode: 'broker' }> & { userStamp: Date | null })) & {
  provider: IdentityProviderEntity;
};

const tokensContext = (stateHash: Buffer) => `upstream-confirmation:${stateHash.toString('base64url')}`;

/**
 * A helper link's sign-in at a provider waits, in its round trip's row of upstream_sign_ins, for
 * the user's "Continue" on the service's page: nothing reaches the device before. The outcome is
 * taken once, by the form's one-time value, from the browser that signed in, for the same link;
 * a relayed token response is sealed while it waits and erased as it is taken. A sign-out voids
 * it meanwhile (revocations.ts): its mark (SignOutsRepository), or its user's stamp moved after
 * the sign-in began.
 */
@Injectable()
export class SignInConfirmationsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly registry: IdentityProvidersService,
    private readonly vault: UpstreamVaultService,
  ) {}

  /** Holds the outcome of the round trip `stateHash` (just taken by its callback); the form's one-time value. */
  async hold(stateHash: Buffer, outcome: HeldOutcome): Promise<string> {
    const confirmation = randomToken(32);
    await this.dataSource.query(
      'UPDATE upstream_sign_ins SET confirmation_hash = $2, user_id = $3, upstream_session_id = $4, tokens_sealed = $5 WHERE state_hash = $1',
      [
        stateHash,
        sha256(confirmation),
        outcome.mode === 'broker' ? outcome.userId : null,
        outcome.mode === 'broker' ? outcome.upstreamSessionId : null,
        outcome.mode === 'relay' ? this.vault.seal(tokensContext(stateHash), JSON.stringify(outcome.tokens)) : null,
      ],
    );
    return confirmation;
  }

  /**
   * The held outcome, once; 'ended' when a sign-out voided it (it is spent all the same);
   * undefined when the value is unknown, used, expired, another browser's or another link's.
   */
  async take(confirmation: string, browser: string | undefined, state: string): Promise<ConfirmedSignIn | 'ended' | undefined> {
    const [row]: HeldRow[] = await this.dataSource.query(
      `WITH held AS (
         SELECT s.state_hash, s.provider, s.user_id, s.upstream_session_id, s.tokens_sealed, u.tokens_valid_after AS user_stamp,
           s.voided_at IS NOT NULL OR NOT ${issuedAfterStampSql('s.started_at')} AS ended
         FROM upstream_sign_ins s LEFT JOIN portal_users u ON u.id = s.user_id
         WHERE s.confirmation_hash = $1 AND s.browser_hash = $2 AND s.purpose->>'state' = $3 AND s.confirmed_at IS NULL AND s.expires_at > now() FOR UPDATE OF s),
       taken AS (UPDATE upstream_sign_ins t SET confirmed_at = now(), tokens_sealed = NULL FROM held h WHERE t.state_hash = h.state_hash)
       SELECT * FROM held`,
      [sha256(confirmation), browser ? sha256(browser) : Buffer.alloc(0), state],
    );
    if (!row) return undefined;
    if (row.ended) return 'ended';
    const provider = await this.registry.find(row.provider);
    if (!provider) return undefined;
    if (row.tokens_sealed) return { mode: 'relay', provider, tokens: JSON.parse(this.vault.open(tokensContext(row.state_hash), row.tokens_sealed)) as oidc.TokenEndpointResponse };
    return row.user_id ? { mode: 'broker', provider, userId: row.user_id, upstreamSessionId: row.upstream_session_id, userStamp: row.user_stamp } : undefined;
  }
}

interface HeldRow {
  state_hash: Buffer;
  provider: string;
  user_id: string | null;
  upstream_session_id: string | null;
  tokens_sealed: Buffer | null;
  user_stamp: Date | null;
  ended: boolean;
}
