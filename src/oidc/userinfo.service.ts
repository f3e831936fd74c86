import { Injectable } from '@nestjs/common';
import { type AuthenticatedToken, BearerAuthenticatorService, BearerRejection } from '../bearer/bearer-authenticator.service.js';
import { readFormBody } from '../oauth/oauth-params.js';
import { IdentityProvidersService } from '../identity-providers/identity-providers.service.js';
import { UsersService } from '../users/users.service.js';
import { claimsFor, OPENID_SCOPE, type ScopedClaims } from '../users/claims.js';

export type UserinfoClaims = ScopedClaims & { sub: string };

/**
 * OpenID Connect Core §5.3: the signed-in user's claims, for an access token whose scope has
 * `openid`. The token passes the same checks as at every bearer route (signature, expiry,
 * audience, revocation of the token or its grant, client enabled, scope still the client's);
 * then it must be a user's (a client_credentials token has no user) and that user still enabled.
 */
@Injectable()
export class UserinfoService {
  constructor(
    private readonly bearer: BearerAuthenticatorService,
    private readonly users: UsersService,
    private readonly providers: IdentityProvidersService,
  ) {}

  /** GET: the token in the Authorization header (RFC 6750 §2.1). */
  fromHeader(authorization: string | undefined): Promise<UserinfoClaims> {
    return this.answer(this.bearer.authenticateHeader(authorization, OPENID_SCOPE));
  }

  /** POST: the token in the Authorization header, or in a form's access_token field (RFC 6750 §2.2), never both (§3.1). */
  fromForm(authorization: string | undefined, contentType: string | undefined, body: unknown): Promise<UserinfoClaims> {
    const bodyToken = readFormBody(contentType, body).get('access_token');
    if (bodyToken === undefined) return this.answer(this.bearer.authenticateHeader(authorization, OPENID_SCOPE));
    if (authorization) throw BearerRejection.invalidRequest('send the access token in the Authorization header or in the body, not in both');
    return this.answer(this.bearer.authenticateToken(bodyToken, OPENID_SCOPE));
  }

  private async answer(authenticated: Promise<AuthenticatedToken>): Promise<UserinfoClaims> {
    const { claims, scopes } = await authenticated;
    // Only a user's grant names one (`sid`); a client's own token speaks for no user.
    if (claims.sid === undefined) throw BearerRejection.insufficientScope(OPENID_SCOPE, 'the access token is a client credentials token: it has no user');
    const user = await this.users.findById(claims.sub);
    if (!user || user.disabledAt) throw BearerRejection.invalidToken('the user of the access token is disabled or gone');
    const trustEmail = user.provider !== null && (await this.providers.find(user.provider))?.trustEmail === true;
    return { sub: user.id, ...claimsFor({ ...user, trustEmail }, scopes) };
  }
}
