import { Injectable } from '@nestjs/common';
import * as oidc from 'openid-client';
import { sha256 } from '../../common/crypto/opaque-token.js';
import type { AnswerDeadline } from '../../common/http/request-deadlines.js';
import { Env } from '../../config/env.js';
import type { IdentityProviderEntity } from '../identity-provider.entity.js';
import { IdentityProvidersService } from '../identity-providers.service.js';
import { UpstreamClientsService } from '../upstream-clients.service.js';
import { UpstreamFailure } from '../upstream-failure.js';
import { type SignInPurpose, UpstreamSignInsRepository, type UntakenReason } from './upstream-sign-ins.repository.js';
import { UpstreamVaultService } from '../upstream-vault.service.js';

/** The provider's answer, checked: its tokens and the ID token's claims (merged with userinfo's when asked). */
export interface UpstreamIdentity {
  tokens: oidc.TokenEndpointResponse;
  claims: oidc.IDToken;
}

/** How a callback ended. */
export type CallbackResult =
  /**
   * `stateHash` keys the round trip's row, where a helper link's outcome waits for the user's
   * confirmation; `startedAt` is when the sign-in began, which a sign-out of its user since voids.
   */
  | { outcome: 'signed-in'; provider: IdentityProviderEntity; purpose: SignInPurpose; identity: UpstreamIdentity; stateHash: Buffer; startedAt: Date }
  /** The provider answered an error (the user cancelled, or it refused): the device is told access_denied. */
  | { outcome: 'cancelled'; provider: IdentityProviderEntity; purpose: SignInPurpose; error: string }
  /** The callback is not one this browser may finish: nothing was changed. */
  | { outcome: 'refused'; reason: UntakenReason | 'unknown_provider' | 'no_state'; provider?: IdentityProviderEntity }
  /** The exchange or its checks failed: nothing is issued. */
  | { outcome: 'failed'; provider: IdentityProviderEntity; purpose: SignInPurpose; failure: UpstreamFailure };

const verifierContext = (stateHash: Buffer) => `upstream-sign-in:${stateHash.toString('base64url')}`;

/**
 * The round trip to a provider (authorization code flow, PKCE S256, state, nonce): `start` makes
 * the provider's authorization URL and records the sign-in; `finish` takes it back once, from the
 * browser that started it, and exchanges the code, which openid-client checks (state, RFC 9207
 * `iss`, the ID token's signature, iss, aud, azp, exp, iat and nonce).
 */
@Injectable()
export class UpstreamSignInService {
  constructor(
    private readonly registry: IdentityProvidersService,
    private readonly upstream: UpstreamClientsService,
    private readonly signIns: UpstreamSignInsRepository,
    private readonly vault: UpstreamVaultService,
    private readonly env: Env,
  ) {}

  /** Where to send the browser; an UpstreamFailure when the provider's configuration cannot be had. */
  async start(provider: IdentityProviderEntity, purpose: SignInPurpose, browser: string, expiresAt: Date): Promise<string> {
    const configuration = await this.upstream.configurationToVisit(provider);
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const verifier = oidc.randomPKCECodeVerifier();
    const stateHash = sha256(state);
    await this.signIns.insert({
      stateHash,
      provider: provider.name,
      browserHash: sha256(browser),
      nonce,
      codeVerifierSealed: this.vault.seal(verifierContext(stateHash), verifier),
      purpose,
      expiresAt,
    });
    return oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.registry.callbackUrl(provider.name),
      scope: provider.scopes.join(' '),
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      // Always the provider's sign-in page, never a silent single sign-on: whoever opens a device's
      // link acts for that device, as typing a password does on the service's own page.
      prompt: 'login',
    }).href;
  }

  /** The provider's answer at GET /sso/callback/NAME (`query` as received); the provider is asked until `deadline.signal()` aborts. */
  async finish(name: string, query: URLSearchParams, browser: string | undefined, deadline: AnswerDeadline): Promise<CallbackResult> {
    const provider = await this.registry.find(name);
    if (!provider) return { outcome: 'refused', reason: 'unknown_provider' };
    const state = query.get('state');
    if (!state || state.length > 512) return { outcome: 'refused', reason: 'no_state', provider };
    const stateHash = sha256(state);
    const taken = await this.signIns.take(stateHash, provider.name, browser ? sha256(browser) : null);
    if (typeof taken === 'string') return { outcome: 'refused', reason: taken, provider };
    const { purpose } = taken;
    const error = query.get('error');
    if (error !== null) return { outcome: 'cancelled', provider, purpose, error: /^[\x20-\x7e]{1,64}$/.test(error) ? error : 'access_denied' };
    try {
      const verifier = this.vault.open(verifierContext(stateHash), taken.codeVerifierSealed);
      const identity = await this.upstream.call(provider, async (configuration) => {
        const callbackUrl = new URL(this.registry.callbackUrl(provider.name));
        callbackUrl.search = query.toString();
        const tokens = await oidc.authorizationCodeGrant(configuration, callbackUrl, {
          pkceCodeVerifier: verifier,
          expectedState: state,
          expectedNonce: taken.nonce,
          idTokenExpected: true,
        });
        assertNotIssuedInTheFuture(tokens.claims()!, this.env.IDP_CLOCK_TOLERANCE);
        // Only a brokered user keeps a profile: a relayed sign-in needs no userinfo round trip.
        const profile = provider.mode === 'broker' ? await profileClaims(configuration, tokens) : {};
        return { tokens, claims: { ...profile, ...tokens.claims()! } };
      }, deadline.signal());
      return { outcome: 'signed-in', provider, purpose, identity, stateHash, startedAt: taken.startedAt };
    } catch (error) {
      if (error instanceof UpstreamFailure) return { outcome: 'failed', provider, purpose, failure: error };
      throw error;
    }
  }
}

/**
 * OpenID Connect Core §3.1.3.7 ¶10: `iat` may be used to refuse tokens issued too far from now;
 * openid-client checks only `exp` for a code exchange, so an ID token issued later than the clock
 * tolerance allows is refused here.
 */
function assertNotIssuedInTheFuture(claims: oidc.IDToken, toleranceSeconds: number): void {
  if (claims.iat > Date.now() / 1000 + toleranceSeconds) throw UpstreamFailure.invalid('the ID token was issued in the future');
}

/**
 * The profile claims the ID token may leave to the userinfo endpoint (OpenID Connect Core §5.4):
 * asked for only when the ID token lacks them; a failure there keeps the ID token's.
 */
async function profileClaims(configuration: oidc.Configuration, tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers): Promise<oidc.JsonObject> {
  const claims = tokens.claims()!;
  if (claims.preferred_username !== undefined || !tokens.access_token || !configuration.serverMetadata().userinfo_endpoint) return {};
  try {
    const { sub: _sub, ...profile } = await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub);
    return profile;
  } catch {
    return {};
  }
}
