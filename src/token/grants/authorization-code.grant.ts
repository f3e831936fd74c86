import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { type ClientEntity, isPublicClient } from '../../clients/client.entity.js';
import { sha256 } from '../../common/crypto/opaque-token.js';
import type { AnswerDeadline } from '../../common/http/request-deadlines.js';
import type { Requester } from '../../common/http/requester.js';
import { SecurityEvents } from '../../common/logging/security-events.js';
import type { GrantFlow } from '../../grants/grant.js';
import { GrantRevocationsService } from '../../grants/grant-revocations.service.js';
import { type RelayedTokenResponse, RelayService } from '../../identity-providers/relay/relay.service.js';
import { type AuthorizationCodeRow, AuthorizationCodesRepository, type CodeRequest } from '../../codes/authorization-codes.repository.js';
import { invalidGrant, OAuthError } from '../../oauth/oauth-error.js';
import { type OAuthParams, requireParam } from '../../oauth/oauth-params.js';
import { isVerifier, s256Challenge, verifierMatches } from '../../oauth/pkce.js';
import { assertScopeAllowed, formatScope, parseScope, userGrantScopes } from '../../oauth/scope.js';
import { inTokenTransaction } from '../token-transaction.js';
import { UserTokenIssuerService, type UserTokenResponse } from '../user-token-issuer.service.js';
import type { GrantHandler } from './grant-handler.js';

/**
 * RFC 6749 §4.1.3, with RFC 7636 PKCE and RFC 9700 §4.2.4 replay handling. One issuing path: the
 * REDEEM statement spends the code and issues its grant; when it does not, the locked path names
 * why the code is refused, spends it, and revokes the grant of a replayed one, but never issues.
 */
@Injectable()
export class AuthorizationCodeGrant implements GrantHandler<UserTokenResponse | RelayedTokenResponse> {
  readonly name = 'authorization_code';

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly codes: AuthorizationCodesRepository,
    private readonly revocations: GrantRevocationsService,
    private readonly tokens: UserTokenIssuerService,
    private readonly events: SecurityEvents,
    private readonly relay: RelayService,
  ) {}

  async handle(params: OAuthParams, client: ClientEntity, deadline: AnswerDeadline, requester: Requester): Promise<UserTokenResponse | RelayedTokenResponse> {
    const codeHash = sha256(requireParam(params, 'code'));
    const scope = parseScope(params.get('scope'));
    assertScopeAllowed(scope, userGrantScopes(client));
    const verifier = params.get('code_verifier');
    const redirectUri = params.get('redirect_uri');
    const grantScope = formatScope(scope);
    // A public client's code is bound by PKCE alone (RFC 9700 §2.1.1): without a verifier it is
    // never redeemed, and the locked path below says why.
    const pkceRequired = isPublicClient(client);

    if (verifier === undefined ? !pkceRequired : isVerifier(verifier)) {
      const grantId = randomUUID();
      const refreshToken = this.tokens.newRefreshToken();
      // Whatever can fail is done before the code is spent, or in the statement that spends it (the
      // ID token's facts): a failure leaves it redeemable.
      const signing = await this.tokens.signing(client);
      const redeemed = await deadline.commit(() => this.codes.redeem(this.dataSource, {
        codeHash,
        clientId: client.id,
        challenge: verifier === undefined ? null : s256Challenge(verifier),
        redirectUri: redirectUri ?? null,
        grantId,
        scope: grantScope,
        refreshTokenHash: refreshToken.hash,
        refreshTokenLifetimeSeconds: refreshToken.lifetimeSeconds,
        address: requester.address,
      }));
      if (redeemed) {
        const grant = { grantId, clientId: client.id, userId: redeemed.user_id, ...granted(redeemed.request, grantScope), nonce: redeemed.request?.nonce };
        return this.tokens.respond(grant, { refreshToken, signing, facts: { ...redeemed, alg: client.idTokenSignedResponseAlg } });
      }
      // Not one of the service's own: perhaps a relayed sign-in's, which hands over the provider's tokens.
      const relayed = await deadline.commit(() =>
        this.relay.redeem({ codeHash, clientId: client.id, challenge: verifier === undefined ? null : s256Challenge(verifier), redirectUri: redirectUri ?? null }),
      );
      if (relayed) return relayed;
    }
    // Not redeemed: name why under the row lock (and revoke on a replay). Nothing is issued here:
    // the transaction's only outcome is an OAuth error (never).
    return inTokenTransaction<never>(this.dataSource, deadline, async (manager, afterCommit) => {
      const code = await this.codes.lock(manager, codeHash);
      // Another client's code is indistinguishable from no code, and is left untouched.
      if (!code || code.client_id !== client.id) {
        // A relayed code presented again leaked as well: the provider's tokens it handed over are refused from now on.
        const replay = await this.relay.replay(manager, codeHash, client.id);
        if (!replay) return invalidGrant('the authorization code is invalid');
        afterCommit(() => {
          const relayed = { reason: 'code_replayed', clientId: client.id, userId: null, grantId: null, grantRevoked: false, provider: replay.provider, relayedTokensForgotten: replay.forgotten } as const;
          this.events.emit('token.replayed', relayed, requester);
        });
        return invalidGrant('the authorization code was already used');
      }
      if (code.consumed_at) {
        // A second use means the code leaked: revoke everything issued from it (RFC 6749 §4.1.2).
        const revoked = code.grant_id ? await this.revocations.revoke(manager, { grantId: code.grant_id }) : [];
        afterCommit(() => {
          const replay = { reason: 'code_replayed', clientId: client.id, userId: code.user_id, grantId: code.grant_id, grantRevoked: revoked.length > 0 } as const;
          this.events.emit('token.replayed', replay, requester);
        });
        return invalidGrant('the authorization code was already used');
      }
      const problem = refusal(code, verifier, redirectUri, pkceRequired);
      if (problem) {
        await this.codes.markConsumed(manager, codeHash, null);
        return invalidGrant(problem);
      }
      // Nothing refuses it now, though the statement did not redeem it: it became redeemable
      // while the statement ran. Left as it is, for a retry's statement to redeem.
      return new OAuthError('temporarily_unavailable', 'the authorization code could not be redeemed just now: try again shortly');
    });
  }
}

/**
 * What a code grants: a standard request's scope (asked at /sso/authorize), or for the helper's
 * link the scope of the token request.
 */
const granted = (request: CodeRequest | null, tokenRequestScope: string | null): { scope: string | null; flow: GrantFlow } =>
  request ? { scope: request.scope, flow: 'code' } : { scope: tokenRequestScope, flow: 'helper' };

/**
 * Why an unspent code of this client is refused, as REDEEM checks it: its user signed out or
 * disabled, its expiry, PKCE (a challenge demands a matching verifier; no challenge refuses one,
 * and a public client's code) and the redirect URL. Null when none of these refuses it.
 */
export function refusal(
  code: Pick<AuthorizationCodeRow, 'user_issuable' | 'expired' | 'code_challenge' | 'redirect_url' | 'request'>,
  verifier: string | undefined,
  redirectUri: string | undefined,
  pkceRequired: boolean,
): string | null {
  if (!code.user_issuable) return 'the user of this authorization code was signed out or disabled';
  if (code.expired) return 'the authorization code has expired';
  if (code.request && redirectUri === undefined) return 'redirect_uri is required: the authorization request had one';
  if (pkceRequired && !code.code_challenge) return 'a public client must use PKCE: this code was requested without a code_challenge';
  if (code.code_challenge && !verifier) return 'code_verifier is required for this code';
  if (code.code_challenge && !verifierMatches(verifier!, code.code_challenge)) return 'code_verifier does not match the code challenge';
  if (!code.code_challenge && verifier) return 'code_verifier was sent but the authorization request had no code_challenge';
  // The helper flow's token request has no redirect_uri; when a client sends one it must be the bound one.
  if (redirectUri !== undefined && redirectUri !== code.redirect_url) return 'redirect_uri does not match the authorization request';
  return null;
}
