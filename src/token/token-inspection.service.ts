import { RelayService } from '../identity-providers/relay/relay.service.js';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { sha256 } from '../common/crypto/opaque-token.js';
import type { Requester } from '../common/http/requester.js';
import { SecurityEvents } from '../common/logging/security-events.js';
import { GrantRevocationsService } from '../grants/grant-revocations.service.js';
import { GrantsRepository } from '../grants/grants.repository.js';
import { RefreshTokensRepository, type RefreshTokenRow } from '../grants/refresh-tokens.repository.js';
import { InvalidJwt } from '../keys/jwt-signer.service.js';
import { AccessTokensService, type AccessTokenClaims } from './access-tokens.service.js';
import { ClientAuthenticationService } from './client-authentication.service.js';
import { invalidRequest } from '../oauth/oauth-error.js';
import { readFormBody, requireParam } from '../oauth/oauth-params.js';

type Identified = { kind: 'access'; claims: AccessTokenClaims } | { kind: 'refresh'; tokenHash: Buffer; row: RefreshTokenRow } | null;

const INACTIVE = { active: false } as const;

/**
 * Introspection (RFC 7662) and revocation (RFC 7009) for the tokens this service issued. A
 * client only ever learns about its own tokens: another client's token is reported inactive.
 */
@Injectable()
export class TokenInspectionService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly clientAuthentication: ClientAuthenticationService,
    private readonly accessTokens: AccessTokensService,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly grants: GrantsRepository,
    private readonly revocations: GrantRevocationsService,
    private readonly events: SecurityEvents,
    private readonly relay: RelayService,
  ) {}

  async introspect(body: unknown, authorization: string | undefined, contentType: string | undefined, requester: Requester): Promise<object> {
    const params = readFormBody(contentType, body);
    const client = await this.clientAuthentication.authenticateConfidential(authorization, params, requester);
    const token = await this.identify(requireParam(params, 'token'));
    if (!token || (await this.isInactive(token, client.id))) return INACTIVE;
    if (token.kind === 'access') {
      const { scope, client_id, sub, exp, iat, iss, aud, jti } = token.claims;
      return { active: true, scope, client_id, sub, exp, iat, iss, aud, jti, token_type: 'Bearer' };
    }
    const { row } = token;
    // No token_type: RFC 7662 §2.2 means an access token type there, and a refresh token has none.
    return { active: true, scope: row.scope ?? undefined, client_id: row.client_id, sub: row.user_id, exp: seconds(row.expires_at) };
  }

  /** Unknown, expired or already revoked tokens are a success too (RFC 7009 §2.2). */
  async revoke(body: unknown, authorization: string | undefined, contentType: string | undefined, requester: Requester): Promise<void> {
    const params = readFormBody(contentType, body);
    const client = await this.clientAuthentication.authenticate(authorization, params, requester);
    const value = requireParam(params, 'token');
    const token = await this.identify(value);
    // Not one of the service's own: perhaps the provider's, relayed to this client (forwarded there).
    if (!token) {
      await this.relay.revoke(value, client.id);
      return;
    }
    const owner = token.kind === 'access' ? token.claims.client_id : token.row.client_id;
    if (owner !== client.id) throw invalidRequest('the token was not issued to this client');
    if (token.kind === 'access') await this.accessTokens.revoke(token.claims);
    // Revoking a refresh token ends its whole grant, access tokens included (RFC 7009 §2.1).
    else {
      // This instance refuses the grant at once; the others when the notification arrives.
      const [revoked] = await this.revocations.revoke(this.dataSource.manager, { grantId: token.row.grant_id });
      if (!revoked) return;
      this.events.emit('grant.revoked', { reason: 'revoked_by_client', clientId: client.id, userId: token.row.user_id, grantId: revoked.id }, requester);
    }
  }

  /** JWTs are access tokens; anything else may be one of our opaque refresh tokens. */
  private async identify(token: string): Promise<Identified> {
    if (token.split('.').length === 3) {
      try {
        return { kind: 'access', claims: await this.accessTokens.verify(token) };
      } catch (error) {
        if (error instanceof InvalidJwt) return null;
        throw error;
      }
    }
    const tokenHash = sha256(token);
    const row = await this.refreshTokens.find(this.dataSource.manager, tokenHash);
    return row ? { kind: 'refresh', tokenHash, row } : null;
  }

  private async isInactive(token: NonNullable<Identified>, clientId: string): Promise<boolean> {
    if (token.kind === 'access') {
      const { claims } = token;
      if (claims.client_id !== clientId || (await this.accessTokens.isRevoked(claims))) return true;
      return claims.sid !== undefined && !(await this.grants.isActive(claims.sid));
    }
    const { row } = token;
    return row.client_id !== clientId || row.rotated_at !== null || row.grant_revoked_at !== null || row.expired;
  }
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
