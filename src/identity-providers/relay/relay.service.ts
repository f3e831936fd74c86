import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import * as oidc from 'openid-client';
import { randomToken, sha256 } from '../../common/crypto/opaque-token.js';
import type { AnswerDeadline } from '../../common/http/request-deadlines.js';
import { Env, USER_ACCESS_TOKEN_TTL } from '../../config/env.js';
import { invalidGrant, OAuthError } from '../../oauth/oauth-error.js';
import type { IdentityProviderEntity } from '../identity-provider.entity.js';
import { IdentityProvidersService } from '../identity-providers.service.js';
import { RelayHandOversRepository, relayContext, type WaitingHandOver } from './relay-hand-overs.repository.js';
import { RelayedTokensRepository } from './relayed-tokens.repository.js';
import { UpstreamClientsService } from '../upstream-clients.service.js';
import { UpstreamFailure } from '../upstream-failure.js';
import { UpstreamVaultService } from '../upstream-vault.service.js';

/** The provider's tokens in the helper flow's token response shape. */
export interface RelayedTokenResponse {
  access_token: string;
  expires_in: number;
  token_type: 'bearer';
  scope: string | null;
  refresh_token?: string;
}

/**
 * Relay mode (the provider's own tokens reach the device): at the callback the provider's token
 * response is sealed and waits for the device's own single-use code or device code; refreshes
 * and revocations of what was relayed are forwarded with the service's credentials, and a
 * relayed refresh token serves only the client it was handed to, one refresh at a time. A
 * relayed code presented twice ends here what it handed over (RFC 6749 §4.1.2).
 */
@Injectable()
export class RelayService {
  constructor(
    private readonly handOvers: RelayHandOversRepository,
    private readonly relayed: RelayedTokensRepository,
    private readonly registry: IdentityProvidersService,
    private readonly upstream: UpstreamClientsService,
    private readonly vault: UpstreamVaultService,
    private readonly env: Env,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** The helper's link relayed: the device's code now (redirect), or null when polled later; undefined when the link was already used. */
  async handOverToHelper(
    provider: IdentityProviderEntity,
    link: { stateId: string; clientId: string; redirectUrl: string | null; codeChallenge: string | null; stateExpiresAt: Date },
    tokens: oidc.TokenEndpointResponse,
  ): Promise<string | null | undefined> {
    const code = link.redirectUrl ? randomToken(32) : null;
    const stored = await this.handOvers.forHelper(
      { ...link, provider: provider.name, codeHash: code === null ? null : sha256(code), codeLifetimeSeconds: this.env.AUTH_CODE_TTL },
      (id) => this.vault.seal(relayContext(id), JSON.stringify(tokens)),
    );
    return stored ? code : undefined;
  }

  /** A device code's provider answer, kept until its user approves on the form with `approvalNonceHash`; false when the code no longer waits. */
  handOverToDevice(provider: IdentityProviderEntity, userCode: string, tokens: oidc.TokenEndpointResponse, approvalNonceHash: Buffer): Promise<boolean> {
    return this.handOvers.forDevice({ userCode, provider: provider.name, approvalNonceHash }, (id) => this.vault.seal(relayContext(id), JSON.stringify(tokens)));
  }

  /** A polling helper device's code for a relayed link, once; null otherwise. */
  async pickUp(stateId: string, clientId: string): Promise<string | null> {
    const code = randomToken(32);
    return (await this.handOvers.pickUp(stateId, clientId, sha256(code), this.env.AUTH_CODE_TTL)) ? code : null;
  }

  /** The provider's tokens for a relayed code, once; undefined when the code is not a relayed one of this client. */
  async redeem(code: { codeHash: Buffer; clientId: string; challenge: string | null; redirectUri: string | null }): Promise<RelayedTokenResponse | undefined> {
    const outcome = await this.dataSource.transaction(async (manager) => {
      const taken = await this.handOvers.redeem(manager, code.codeHash, code.clientId);
      if (!taken) return undefined;
      // Spent either way: a code presented with the wrong verifier or redirect URL may have been stolen.
      if (taken.codeChallenge !== code.challenge || (code.redirectUri !== null && code.redirectUri !== taken.redirectUrl)) return 'mismatch' as const;
      return this.deliver(manager, taken, code.clientId);
    });
    if (outcome === 'mismatch') throw invalidGrant('the code_verifier or redirect_uri does not match the authorization request');
    return outcome;
  }

  /** What a relayed hand-over held, opened and recorded as this client's in the hand-over's transaction: erased and recorded together. */
  async deliver(manager: EntityManager, taken: WaitingHandOver, clientId: string): Promise<RelayedTokenResponse> {
    const tokens = JSON.parse(this.vault.open(relayContext(taken.id), taken.tokenResponseSealed)) as oidc.TokenEndpointResponse;
    return this.answer(manager, tokens, clientId, taken.provider, taken.id);
  }

  /**
   * A relayed code of this client presented again, in the caller's transaction: every token that
   * descends from it is forgotten here, so none of them is refreshed or revoked through the
   * service any more (the provider is not told: the service keeps no token value to tell it).
   * Undefined when the code is not a relayed one already presented.
   */
  async replay(manager: EntityManager, codeHash: Buffer, clientId: string): Promise<{ provider: string; forgotten: number } | undefined> {
    const presented = await this.handOvers.presented(manager, codeHash, clientId);
    if (!presented) return undefined;
    return { provider: presented.provider, forgotten: await this.relayed.forgetHandedOver(manager, presented.id) };
  }

  /**
   * A refresh with a relayed refresh token, forwarded to its provider; undefined when the token
   * is not a relayed one (the caller goes on with its own). Another client's: invalid_grant. The
   * token is leased for the provider call, so a concurrent refresh with it is told to try again
   * (503) rather than forwarded too: a rotating provider would spend it on one and refuse the
   * other, and that refusal would end the session the first one renewed. The request's deadline
   * is held from the lease to the settling: the provider is asked only until the deadline, and
   * a token it rotated is recorded only for this answer, never behind a 503 (the old one then
   * stays usable here).
   */
  refresh(refreshToken: string, clientId: string, deadline: AnswerDeadline): Promise<RelayedTokenResponse | undefined> {
    return deadline.commit(() => this.forwardRefresh(refreshToken, clientId, deadline));
  }

  private async forwardRefresh(refreshToken: string, clientId: string, deadline: AnswerDeadline): Promise<RelayedTokenResponse | undefined> {
    const hash = sha256(refreshToken);
    const leased = await this.relayed.leaseRefresh(hash, clientId, this.upstream.callLeaseSeconds);
    if (leased === undefined) return undefined;
    if (leased === 'foreign') throw invalidGrant('the refresh token is invalid');
    if (leased === 'busy') throw new OAuthError('temporarily_unavailable', 'another refresh with this refresh token is waiting for its identity provider: try again shortly');
    let tokens: oidc.TokenEndpointResponse;
    try {
      const provider = await this.registry.find(leased.provider);
      if (!provider) throw invalidGrant('the identity provider of this refresh token is no longer registered');
      tokens = await this.upstream.call(provider, (configuration) => oidc.refreshTokenGrant(configuration, refreshToken), deadline.signal());
    } catch (error) {
      if (error instanceof UpstreamFailure && error.kind === 'refused' && error.error === 'invalid_grant') {
        await this.relayed.forget(this.dataSource.manager, hash);
        throw invalidGrant('the identity provider refused the refresh token');
      }
      // Nothing changed at the provider (as far as the service knows): a retry may go at once.
      await this.relayed.release(hash);
      if (error instanceof UpstreamFailure) throw new OAuthError('temporarily_unavailable', 'the identity provider could not be reached: try again shortly');
      throw error;
    }
    const kept = !tokens.refresh_token || tokens.refresh_token === refreshToken;
    return this.dataSource.transaction(async (manager) => {
      // Ends the lease: the old token is erased (rotated) or recorded again (kept).
      const settled = await this.relayed.settle(manager, hash, !kept);
      if (!settled) throw invalidGrant('the refresh token was revoked while it was being refreshed');
      return this.answer(manager, tokens, clientId, leased.provider, settled.handOverId, kept ? refreshToken : undefined);
    });
  }

  /** RFC 7009 for a relayed token: forwarded when the provider has a revocation endpoint, and forgotten; false when not relayed (or another client's). */
  async revoke(token: string, clientId: string): Promise<boolean> {
    const hash = sha256(token);
    const found = await this.relayed.find(hash);
    if (!found || found.clientId !== clientId) return false;
    const provider = await this.registry.find(found.provider);
    if (provider) {
      await this.upstream
        .call(provider, async (configuration) => {
          if (configuration.serverMetadata().revocation_endpoint) await oidc.tokenRevocation(configuration, token, { token_type_hint: found.kind });
        })
        .catch((error: unknown) => {
          if (!(error instanceof UpstreamFailure)) throw error;
          if (error.kind === 'unreachable') throw new OAuthError('temporarily_unavailable', 'the identity provider could not be reached: try again shortly');
        });
    }
    await this.relayed.forget(this.dataSource.manager, hash);
    return true;
  }

  /** The device's answer, its tokens recorded as this client's and as descending from the hand-over `handOverId`. */
  private async answer(
    manager: EntityManager,
    tokens: oidc.TokenEndpointResponse,
    clientId: string,
    provider: string,
    handOverId: string | null,
    keptRefreshToken?: string,
  ): Promise<RelayedTokenResponse> {
    const expiresIn = typeof tokens.expires_in === 'number' ? Math.max(0, Math.floor(tokens.expires_in)) : USER_ACCESS_TOKEN_TTL;
    const refreshToken = tokens.refresh_token ?? keptRefreshToken;
    await this.relayed.record(
      manager,
      [
        { hash: sha256(tokens.access_token), kind: 'access_token', lifetimeSeconds: Math.max(expiresIn, 60) },
        // A refresh token the provider kept is recorded again: its life here starts over, as at the provider.
        ...(refreshToken ? [{ hash: sha256(refreshToken), kind: 'refresh_token' as const, lifetimeSeconds: this.env.REFRESH_TOKEN_TTL }] : []),
      ],
      clientId,
      provider,
      handOverId,
    );
    return {
      access_token: tokens.access_token,
      expires_in: expiresIn,
      token_type: 'bearer',
      scope: typeof tokens.scope === 'string' ? tokens.scope : null,
      ...(refreshToken ? { refresh_token: refreshToken } : {}),
    };
  }
}
