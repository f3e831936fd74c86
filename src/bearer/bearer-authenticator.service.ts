import { Injectable } from '@nestjs/common';
import { ClientsService } from '../clients/clients.service.js';
import { errorDescription } from '../common/errors/error-description.js';
import { Env } from '../config/env.js';
import { InvalidJwt } from '../keys/jwt-signer.service.js';
import { type AccessTokenClaims, AccessTokensService } from '../token/access-tokens.service.js';
import { userGrantScopes } from '../oauth/scope.js';

/** RFC 6750 §3.1 error codes. */
export type BearerErrorCode = 'invalid_request' | 'invalid_token' | 'insufficient_scope';

const REALM = 'realm="voyage-connect"';

/** Why a bearer token was refused, as RFC 6750 §3 reports it: a status, an error code (none when no token was sent) and the challenge. */
export class BearerRejection extends Error {
  private constructor(
    readonly status: 400 | 401 | 403,
    readonly error: BearerErrorCode | null,
    readonly wwwAuthenticate: string,
    message: string,
  ) {
    super(message);
  }

  /** §3.1: a request without credentials gets the challenge alone, no error code. */
  static missing(): BearerRejection {
    return new BearerRejection(401, null, `Bearer ${REALM}`, 'a bearer token is required');
  }

  /** RFC 6750 §3 allows error_description the same characters as RFC 6749 §5.2, inside quotes. */
  static invalidToken(description: string): BearerRejection {
    return new BearerRejection(401, 'invalid_token', `Bearer ${REALM}, error="invalid_token", error_description="${errorDescription(description)}"`, description);
  }

  static insufficientScope(scope: string, description: string): BearerRejection {
    return new BearerRejection(403, 'insufficient_scope', `Bearer ${REALM}, error="insufficient_scope", scope="${scope}"`, description);
  }

  static invalidRequest(description: string): BearerRejection {
    return new BearerRejection(400, 'invalid_request', `Bearer ${REALM}, error="invalid_request", error_description="${errorDescription(description)}"`, description);
  }
}

/** The token of an Authorization header (RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token); a BearerRejection for none or another scheme. */
export function bearerTokenOf(authorization: string | undefined): string {
  if (!authorization) throw BearerRejection.missing();
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(authorization.trim());
  if (!match) throw BearerRejection.invalidToken('the Authorization header is not a bearer token');
  return match[1];
}

/** A token that passed: its claims, and the scopes it still holds (its own, less those its client has lost since). */
export interface AuthenticatedToken {
  claims: AccessTokenClaims;
  scopes: string[];
}

/**
 * Resource-server side of the access tokens: signature with a published key, `typ` at+jwt,
 * issuer, expiry, not revoked, its client still enabled, and the required scope, in the token and
 * still among its client's scopes (RFC 6750).
 */
@Injectable()
export class BearerAuthenticatorService {
  /** The origins this service answers on: the API's, and the same host over ws/wss. */
  private readonly ownOrigins: Set<string>;

  constructor(
    private readonly accessTokens: AccessTokensService,
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
    return (await this.authenticateHeader(authorization, requiredScope)).claims;
  }

  /** The token of an Authorization header, checked as `authenticateToken` does. */
  async authenticateHeader(authorization: string | undefined, requiredScope: string): Promise<AuthenticatedToken> {
    return this.authenticateToken(bearerTokenOf(authorization), requiredScope);
  }

  /** The checks of the class comment, on a token however it came (RFC 6750 §2.2: also a form field). */
  async authenticateToken(token: string, requiredScope: string): Promise<AuthenticatedToken> {
    let claims: AccessTokenClaims;
    try {
      claims = await this.accessTokens.verify(token);
    } catch (error) {
      if (error instanceof InvalidJwt) throw BearerRejection.invalidToken('the access token is invalid or expired');
      throw error;
    }
    // RFC 9068 §4: a token issued for another resource (RFC 8707) is not for this service.
    if (!this.isForThisService(claims.aud)) throw BearerRejection.invalidToken('the access token is for another audience');
    const client = (await this.accessTokens.isRevoked(claims)) ? null : await this.clients.findEnabled(claims.client_id);
    if (!client) throw BearerRejection.invalidToken('the access token was revoked');
    // A scope taken from the client (client:update) ends at once, in tokens issued before too.
    const held = userGrantScopes(client);
    const scopes = (claims.scope ?? '').split(' ').filter((scope) => scope !== '' && held.includes(scope));
    if (!scopes.includes(requiredScope)) throw BearerRejection.insufficientScope(requiredScope, `the token lacks scope ${requiredScope}`);
    return { claims, scopes };
  }
}
