import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { randomToken, sha256 } from '../common/crypto/opaque-token.js';
import { Env, USER_ACCESS_TOKEN_TTL } from '../config/env.js';
import { AccessTokens } from './access-tokens.service.js';
import { RefreshTokensRepository } from './refresh-tokens.repository.js';

/** Seed 000 token response; `scope` is null when the request carried none. */
export interface UserTokenResponse {
  access_token: string;
  expires_in: number;
  token_type: 'bearer';
  scope: string | null;
  refresh_token: string;
}

/** Issues the access and refresh token pair of a grant, inside the caller's transaction. */
@Injectable()
export class UserTokenIssuer {
  constructor(
    private readonly accessTokens: AccessTokens,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly env: Env,
  ) {}

  async issue(manager: EntityManager, grant: { grantId: string; clientId: string; userId: string; scope: string | null }): Promise<UserTokenResponse> {
    const refreshToken = randomToken(32);
    await this.refreshTokens.insert(manager, {
      tokenHash: sha256(refreshToken),
      grantId: grant.grantId,
      clientId: grant.clientId,
      expiresAt: new Date(Date.now() + this.env.REFRESH_TOKEN_TTL * 1000),
    });
    const accessToken = await this.accessTokens.issue({
      subject: grant.userId,
      clientId: grant.clientId,
      scope: grant.scope,
      grantId: grant.grantId,
      lifetimeSeconds: USER_ACCESS_TOKEN_TTL,
    });
    return { access_token: accessToken, expires_in: USER_ACCESS_TOKEN_TTL, token_type: 'bearer', scope: grant.scope, refresh_token: refreshToken };
  }
}
