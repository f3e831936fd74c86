import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { Env, USER_ACCESS_TOKEN_TTL } from '../config/env.js';
import { type JwtSigning, JwtSignerService } from '../keys/jwt-signer.service.js';
import { claimsFor, type ClaimsSource, trustEmailSql } from '../users/claims.js';
import type { IdTokenAlg } from '../clients/client.entity.js';

/** The JOSE type of an ID token: plain JWT (OpenID Connect Core §2 names no other). */
export const ID_TOKEN_TYP = 'JWT';

/** Whether a grant's scope asks for ID tokens. */
export const wantsIdToken = (scope: string | null) => scope?.split(' ').includes('openid') ?? false;

/**
 * ID tokens (OpenID Connect Core §2, §3.1.3.6, §12.2): beside the access token of a grant whose
 * scope has `openid`, at the code exchange (with the request's `nonce`) and at every refresh and
 * device poll (without). Each carries the grant's sign-in (`auth_time`, `sid`), `at_hash` of its
 * access token, and the claims the scope allows, read as they are now.
 */
@Injectable()
export class IdTokensService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly signer: JwtSignerService,
    private readonly env: Env,
  ) {}

  /**
   * `facts`: what the statement that issued the grant's tokens read for its ID token (no read
   * here); else they are read, through `reader` (the issuing transaction) when the grant is not
   * committed yet.
   */
  async issue(
    grant: { grantId: string; clientId: string; scope: string | null },
    accessToken: string,
    options: { nonce?: string; signing?: JwtSigning; reader?: EntityManager; facts?: IdTokenFacts } = {},
  ): Promise<string> {
    const row = options.facts ?? (await this.read(grant.grantId, options.reader ?? this.dataSource.manager));
    const user: ClaimsSource = { username: row.username, upstreamIssuer: row.upstream_issuer, profile: row.profile, profileUpdatedAt: row.profile_updated_at, trustEmail: row.trust_email };
    // The client's algorithm (RS256 unless registered otherwise); a caller that prepared signing prepared it too.
    const signing = options.signing ?? (await this.signer.prepare([row.alg]));
    return signing.sign(
      {
        iss: this.env.identityUrl,
        sub: row.user_id,
        aud: grant.clientId,
        auth_time: Math.floor(row.auth_time.getTime() / 1000),
        ...(options.nonce !== undefined ? { nonce: options.nonce } : {}),
        at_hash: atHash(accessToken),
        ...(row.sid ? { sid: row.sid } : {}),
        ...claimsFor(user, grant.scope?.split(' ') ?? []),
      },
      { typ: ID_TOKEN_TYP, expiresInSeconds: USER_ACCESS_TOKEN_TTL, alg: row.alg },
    );
  }

  private async read(grantId: string, reader: EntityManager): Promise<IdTokenFacts> {
    const [row]: IdTokenFacts[] = await reader.query(
      `SELECT g.user_id, c.id_token_signed_response_alg AS alg, ${idTokenFactsSql('COALESCE(g.auth_time, g.created_at)', 'g.sid')}
       FROM grants g JOIN portal_users u ON u.id = g.user_id JOIN clients c ON c.id = g.client_id WHERE g.id = $1`,
      [grantId],
    );
    return row;
  }
}

/**
 * What an ID token says of its grant's sign-in and user. A statement that spends a credential
 * (a code, a refresh token) returns it with the grant, so no read is left for after the commit.
 */
export interface IdTokenFacts extends ClaimsSourceRow {
  user_id: string;
  alg: IdTokenAlg;
  auth_time: Date;
  sid: string | null;
}

/** The columns of IdTokenFacts but `user_id` and `alg`: the sign-in's time and sid as given, the user's as `u`. */
export const idTokenFactsSql = (authTimeSql: string, sidSql: string) =>
  `${authTimeSql} AS auth_time, ${sidSql} AS sid, u.username, u.upstream_issuer, u.profile, u.profile_updated_at, ${trustEmailSql('u')} AS trust_email`;

interface ClaimsSourceRow {
  username: string;
  upstream_issuer: string | null;
  profile: ClaimsSource['profile'];
  profile_updated_at: Date;
  trust_email: boolean;
}

/** OpenID Connect Core §3.1.3.6: the left half of the access token's SHA-256 (both algorithms hash with SHA-256), base64url. */
const atHash = (accessToken: string) => createHash('sha256').update(accessToken, 'ascii').digest().subarray(0, 16).toString('base64url');
