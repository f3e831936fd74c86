import { Injectable } from '@nestjs/common';
import { ClientsService } from '../clients/clients.service.js';
import { errorDescription } from '../common/errors/error-description.js';
import { Env } from '../config/env.js';
import { InvalidJwt } from '../keys/jwt-signer.service.js';
import { type AccessTokenClaims, AccessTokens } from '../token/access-tokens.service.js';

/** Why a bearer token was refused, as RFC 6750 §3 reports it. */
export class BearerRejection extends Error {
  constructor(
    readonly status: 401 | 403,
    readonly wwwAuthenticate: string,
    message: string,
  ) {
    super(message);
  }
}

const REALM = 'realm="voyage-connect"';

/**
 * Resource-server side of the access tokens: signature with a published key, `typ` at+jwt,
 * issuer, expiry, not revoked, its client still enabled, and the required scope, in the token and
 * still among its client's scopes (RFC 6750).
 */
@Injectable()
export class BearerAuthenticator {
  /** The origins this service answers on: the API's, and the same host over ws/wss. */
  private readonly ownOrigins: Set<string>;

  constructor(
    private readonly accessTokens: AccessTokens,
    private readonly clients: ClientsService,
    env: Env,
  ) {
    const api = new URL(env.apiUrl);
    this.ownOrigins = new Set([api.origin, `${api.protocol === 'https:' ? 'wss:' : 'ws:'}//${api.host}`]);
  }

  /** `aud` is the API URL by default, or a resource the client named, which must be on this service's origin. */
  private isForThisService(audience: unknown): boolean {
    const audiences = Array.isArray(audience) ? audience : [audience];
    return audiences.some((value) => {
      if (typeof value !== 'string') return false;
      try {
        return this.ownOrigins.has(new URL(value).origin);
      } catch {
        return false;
      }
    });
  }

  async authenticate(authorization: string | undefined, requiredScope: string): Promise<AccessTokenClaims> {
    // RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token.
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(authorization?.trim() ?? '');
    if (!authorization) throw new BearerRejection(401, `Bearer ${REALM}`, 'a bearer token is required');
    if (!match) throw invalidToken('the Authorization header is not a bearer token');
    let claims: AccessTokenClaims;
    try {
      claims = await this.accessTokens.verify(match[1]);
    } catch (error) {
      if (error instanceof InvalidJwt) throw invalidToken('the access token is invalid or expired');
      throw error;
    }
    // RFC 9068 §4: a token issued for another resource (RFC 8707) is not for this service.
    if (!this.isForThisService(claims.aud)) throw invalidToken('the access token is for another audience');
    const client = (await this.accessTokens.isRevoked(claims)) ? null : await this.clients.findEnabled(claims.client_id);
    if (!client) throw invalidToken('the access token was revoked');
    // A scope taken from the client (client:update) ends at once, in tokens issued before too.
    if (!(claims.scope ?? '').split(' ').includes(requiredScope) || !client.scopes.includes(requiredScope)) {
      throw new BearerRejection(403, `Bearer ${REALM}, error="insufficient_scope", scope="${requiredScope}"`, `the token lacks scope ${requiredScope}`);
    }
    return claims;
  }
}

// RFC 6750 §3 allows error_description the same characters as RFC 6749 §5.2, inside quotes.
const invalidToken = (description: string) =>
  new BearerRejection(401, `Bearer ${REALM}, error="invalid_token", error_description="${errorDescription(description)}"`, description);
