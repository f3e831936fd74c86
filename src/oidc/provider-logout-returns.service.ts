import { Injectable } from '@nestjs/common';
import { Env } from '../config/env.js';
import { InvalidJwt, JwtSignerService } from '../keys/jwt-signer.service.js';

/** Its own JOSE type: no sign-in state, access or ID token passes for it, nor it for them. */
export const LOGOUT_RETURN_TYP = 'vc-logout-return+jwt';

/** Where a provider sends the browser back after its own sign-out (the operator registers it there). */
export const LOGOUT_RETURN_PATH = '/sso/logout/done';

/** Time for the provider's own "Sign out?" question; a state read later only leads to "You're signed out". */
const LIFETIME_SECONDS = 300;

/** Where an application asked the browser to go after signing out, as /sso/logout checked it. */
export interface AppReturn {
  clientId: string;
  redirectUri: string;
  state?: string;
}

interface ReturnClaims {
  client_id?: unknown;
  post_logout_redirect_uri?: unknown;
  state?: unknown;
}

/**
 * The `state` the service gives a brokered user's provider at its end_session_endpoint, so the
 * sign-out comes back through /sso/logout/done and on to the application, as a broker does: a
 * JWT signed with the service's keys, valid a few minutes, carrying the application's
 * post_logout_redirect_uri and `state`. It vouches for what /sso/logout checked, no more: the
 * address is checked against the client's registration again when the browser comes back.
 */
@Injectable()
export class ProviderLogoutReturnsService {
  constructor(
    private readonly signer: JwtSignerService,
    private readonly env: Env,
  ) {}

  /** The post_logout_redirect_uri the service gives providers. At FRONTEND_URL, beside /sso/callback/NAME. */
  get returnUrl(): string {
    return `${this.env.frontendUrl}${LOGOUT_RETURN_PATH}`;
  }

  issue(app: AppReturn): Promise<string> {
    return this.signer.sign(
      {
        iss: this.env.identityUrl,
        client_id: app.clientId,
        post_logout_redirect_uri: app.redirectUri,
        ...(app.state === undefined ? {} : { state: app.state }),
      },
      { typ: LOGOUT_RETURN_TYP, expiresInSeconds: LIFETIME_SECONDS },
    );
  }

  /** The application's way on that a state carries; undefined for a forged, changed or expired one, or another kind of token. */
  async read(state: string): Promise<AppReturn | undefined> {
    let claims: ReturnClaims;
    try {
      claims = await this.signer.verify<ReturnClaims>(state, { typ: LOGOUT_RETURN_TYP, issuer: this.env.identityUrl });
    } catch (error) {
      if (error instanceof InvalidJwt) return undefined;
      throw error;
    }
    const { client_id: clientId, post_logout_redirect_uri: redirectUri, state: appState } = claims;
    if (typeof clientId !== 'string' || typeof redirectUri !== 'string' || (appState !== undefined && typeof appState !== 'string')) return undefined;
    return { clientId, redirectUri, ...(appState === undefined ? {} : { state: appState }) };
  }
}
