import { randomUUID } from 'node:crypto';
import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Env } from '../config/env.js';
import { NotifiedIdSet, notifiedIdPayloadSql } from '../database/notified-id-set.js';
import { PgListenerService } from '../database/pg-listener.service.js';
import { RevokedGrantsService } from '../grants/revoked-grants.service.js';
import { JwtSignerService, type JwtSigning } from '../keys/jwt-signer.service.js';

/** RFC 9068 §2.1: the JOSE type of a JWT access token. */
export const ACCESS_TOKEN_TYP = 'at+jwt';

/** RFC 9068 §2.2 claims; `sid` names the grant a user token belongs to (absent for client tokens). */
export interface AccessTokenClaims {
  iss: string;
  sub: string;
  aud: string;
  client_id: string;
  scope?: string;
  iat: number;
  exp: number;
  jti: string;
  sid?: string;
}

export interface NewAccessToken {
  subject: string;
  clientId: string;
  scope: string | null;
  lifetimeSeconds: number;
  grantId?: string;
  audience?: string;
}

/** NOTIFY channel announcing a revoked access token (a NotifiedIdSet of jti). */
const TOKEN_REVOKED_CHANNEL = 'vc_token_revoked';

/** What was revoked: one access token, or a grant with every token it issued. */
export type Revocation = { jti: string } | { grantId: string };

@Injectable()
export class AccessTokensService implements OnApplicationShutdown {
  /** Revoked token ids, mirrored on every instance: each stream upgrade and publish checks them (and the revoked grants). */
  private readonly revoked: NotifiedIdSet;
  private readonly revocationListeners: ((revocation: Revocation) => void)[] = [];

  constructor(
    private readonly signer: JwtSignerService,
    private readonly env: Env,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly revokedGrants: RevokedGrantsService,
    listener: PgListenerService,
  ) {
    this.revoked = new NotifiedIdSet(
      listener,
      TOKEN_REVOKED_CHANNEL,
      async () => {
        const rows: { jti: string; expires_at: Date }[] = await dataSource.query('SELECT jti, expires_at FROM revoked_access_tokens WHERE expires_at > now()');
        return rows.map((row) => ({ id: row.jti, expiresAt: row.expires_at }));
      },
      (jti) => this.announce({ jti }),
    );
    revokedGrants.onRevoked((grantId) => this.announce({ grantId }));
  }

  onApplicationShutdown(): void {
    this.revoked.stop();
  }

  /**
   * Tells `listener` of every revocation on any instance, and of those whose notice was lost
   * while this instance's listener was down, once it has re-read them.
   */
  onRevoked(listener: (revocation: Revocation) => void): void {
    this.revocationListeners.push(listener);
  }

  async issue(token: NewAccessToken, signing?: JwtSigning): Promise<string> {
    return (signing ?? (await this.signer.prepare())).sign(
      {
        iss: this.env.identityUrl,
        sub: token.subject,
        aud: token.audience ?? this.env.apiUrl,
        client_id: token.clientId,
        ...(token.scope ? { scope: token.scope } : {}),
        jti: randomUUID(),
        ...(token.grantId ? { sid: token.grantId } : {}),
      },
      { typ: ACCESS_TOKEN_TYP, expiresInSeconds: token.lifetimeSeconds },
    );
  }

  /** Signature, type, issuer and expiry; throws InvalidJwt. Revocation is checked separately. */
  verify(token: string): Promise<AccessTokenClaims> {
    return this.signer.verify<AccessTokenClaims>(token, { typ: ACCESS_TOKEN_TYP, issuer: this.env.identityUrl });
  }

  /** RFC 7009 for a JWT: remember its id until it would have expired anyway. */
  async revoke(claims: AccessTokenClaims): Promise<void> {
    await this.dataSource.query(
      `WITH revoked AS (
         INSERT INTO revoked_access_tokens (jti, expires_at) VALUES ($1, to_timestamp($2)) ON CONFLICT DO NOTHING RETURNING jti, expires_at)
       SELECT pg_notify('${TOKEN_REVOKED_CHANNEL}', ${notifiedIdPayloadSql('jti', 'expires_at')}) FROM revoked`,
      [claims.jti, claims.exp],
    );
    // This instance refuses the token at once; the others when the notification arrives.
    this.revoked.add(claims.jti, claims.exp * 1000);
  }

  /** Whether the token, or the grant it belongs to, was revoked. */
  async isRevoked(claims: AccessTokenClaims): Promise<boolean> {
    const grantId = claims.sid ?? null;
    if (this.revoked.isComplete && this.revokedGrants.isComplete) return this.revoked.has(claims.jti) || (grantId !== null && this.revokedGrants.has(grantId));
    const rows = await this.dataSource.query(
      `SELECT 1 FROM revoked_access_tokens WHERE jti = $1
       UNION ALL SELECT 1 FROM grants WHERE id = $2::uuid AND revoked_at IS NOT NULL`,
      [claims.jti, grantId],
    );
    return rows.length > 0;
  }

  private announce(revocation: Revocation): void {
    for (const listener of this.revocationListeners) listener(revocation);
  }
}
