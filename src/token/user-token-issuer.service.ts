import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { randomToken, sha256 } from '../common/crypto/opaque-token.js';
import { Env, USER_ACCESS_TOKEN_TTL } from '../config/env.js';
import type { ClientEntity } from '../clients/client.entity.js';
import type { UserGrant } from '../grants/grant.js';
import { RefreshTokensRepository } from '../grants/refresh-tokens.repository.js';
import { type JwtSigning, JwtSignerService } from '../keys/jwt-signer.service.js';
import { AccessTokensService } from './access-tokens.service.js';
import { type IdTokenFacts, IdTokensService, wantsIdToken } from './id-tokens.service.js';

/**
 * A token response of a user's grant. The helper flow's grants answer as it defines (`scope: null`
 * when the request carried none, always a refresh token); a grant the device flow began follows
 * RFC 6749 §5.1 (no scope without one) and has a refresh token only for a client registered with
 * the refresh_token grant.
 */
export interface UserTokenResponse {
  access_token: string;
  expires_in: number;
  token_type: 'bearer';
  scope?: string | null;
  refresh_token?: string;
  /** When the grant's scope has `openid` (OpenID Connect Core §3.1.3.3). */
  id_token?: string;
}

/** A refresh token about to be stored: the value for the client, the hash for the database. */
export interface NewRefreshToken {
  value: string;
  hash: Buffer;
  /** It expires this long after it is stored, by the database's clock. */
  lifetimeSeconds: number;
}

/** Issues the access and refresh token pair of a grant. */
@Injectable()
export class UserTokenIssuerService {
  constructor(
    private readonly accessTokens: AccessTokensService,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly env: Env,
    private readonly idTokens: IdTokensService,
    private readonly signer: JwtSignerService,
  ) {}

  newRefreshToken(): NewRefreshToken {
    const value = randomToken(32);
    return { value, hash: sha256(value), lifetimeSeconds: this.env.REFRESH_TOKEN_TTL };
  }

  /** Stores a new refresh token inside the caller's transaction (unless told not to) and answers with the tokens. */
  async issue(manager: EntityManager, grant: UserGrant, { withRefreshToken = true } = {}): Promise<UserTokenResponse> {
    if (!withRefreshToken) return this.respond(grant, { reader: manager });
    const refreshToken = this.newRefreshToken();
    await this.refreshTokens.insert(manager, { tokenHash: refreshToken.hash, grantId: grant.grantId, clientId: grant.clientId, lifetimeSeconds: refreshToken.lifetimeSeconds });
    return this.respond(grant, { refreshToken, reader: manager });
  }

  /** The signing key for `respond`, fetched before the caller commits (see JwtSignerService.prepare). */
  signing(client: Pick<ClientEntity, 'idTokenSignedResponseAlg'>): Promise<JwtSigning> {
    return this.signer.prepare([client.idTokenSignedResponseAlg]);
  }

  /**
   * The response for a refresh token already stored (or none): signs the access token, and the ID
   * token when the scope asks for one, from `facts` read by the statement that spent the
   * credential (nothing is read then), else read through `reader` (the transaction the grant is
   * not committed out of yet).
   */
  async respond(grant: UserGrant, { refreshToken, signing, facts, reader }: { refreshToken?: NewRefreshToken; signing?: JwtSigning; facts?: IdTokenFacts; reader?: EntityManager }): Promise<UserTokenResponse> {
    const accessToken = await this.accessTokens.issue(
      { subject: grant.userId, clientId: grant.clientId, scope: grant.scope, grantId: grant.grantId, lifetimeSeconds: USER_ACCESS_TOKEN_TTL },
      signing,
    );
    const idToken = wantsIdToken(grant.scope) ? await this.idTokens.issue(grant, accessToken, { nonce: grant.nonce, signing, facts, reader }) : undefined;
    return {
      access_token: accessToken,
      expires_in: USER_ACCESS_TOKEN_TTL,
      token_type: 'bearer',
      ...(grant.scope !== null || grant.flow === 'helper' ? { scope: grant.scope } : {}),
      ...(refreshToken ? { refresh_token: refreshToken.value } : {}),
      ...(idToken ? { id_token: idToken } : {}),
    };
  }
}
