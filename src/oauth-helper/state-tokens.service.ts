import { Injectable } from '@nestjs/common';
import { randomToken } from '../common/crypto/opaque-token.js';
import { Env } from '../config/env.js';
import { InvalidJwt, JwtSignerService } from '../keys/jwt-signer.service.js';
import type { Prompt } from './authorization-request.js';

/** Its own JOSE type, so a state can never pass as an access token or the other way round. */
export const STATE_TYP = 'vc-state+jwt';

export interface StateClaims {
  jti: string;
  client_id: string;
  redirect_url?: string;
  code_challenge?: string;
  /** A standard authorization request's own parameters: the link /sso/authorize made of it (absent on the helper's). */
  request?: RequestClaims;
  iat: number;
  exp: number;
}

/** What a standard authorization request asks beyond the helper's link: echoed to the client, or shaping the sign-in. */
export interface RequestClaims {
  scope: string[];
  state?: string;
  nonce?: string;
  prompt?: Prompt[];
  max_age?: number;
  login_hint?: string;
  /** The user the request's id_token_hint names (their id, the ID tokens' `sub`). */
  hinted_sub?: string;
}

const EXPIRED = 'state has expired';

export class InvalidState extends Error {
  /** Genuine but past its lifetime, as opposed to missing, changed or another client's. */
  get expired(): boolean {
    return this.message === EXPIRED;
  }
}

/**
 * A sign-in link: the helper's `state`, or what /sso/authorize makes of a standard authorization
 * request so the login page can carry it. A signed JWT, unique per call, bound to client, redirect
 * URL and PKCE challenge; one link yields one code.
 */
@Injectable()
export class StateTokensService {
  constructor(
    private readonly signer: JwtSignerService,
    private readonly env: Env,
  ) {}

  issue(binding: { clientId: string; redirectUrl?: string; codeChallenge?: string; request?: RequestClaims }): Promise<string> {
    return this.signer.sign(
      {
        iss: this.env.identityUrl,
        jti: randomToken(16),
        client_id: binding.clientId,
        ...(binding.redirectUrl ? { redirect_url: binding.redirectUrl } : {}),
        ...(binding.codeChallenge ? { code_challenge: binding.codeChallenge } : {}),
        ...(binding.request ? { request: binding.request } : {}),
      },
      { typ: STATE_TYP, expiresInSeconds: this.env.STATE_TTL },
    );
  }

  /** The claims of a state issued to `clientId`; throws InvalidState for anything else. */
  async verify(state: string | undefined, clientId: string): Promise<StateClaims> {
    if (!state) throw new InvalidState('state is missing');
    const claims = await this.verifySignature(state);
    if (claims.client_id !== clientId || typeof claims.jti !== 'string') throw new InvalidState('state was issued to another client');
    return claims;
  }

  private async verifySignature(state: string): Promise<StateClaims> {
    try {
      return await this.signer.verify<StateClaims>(state, { typ: STATE_TYP, issuer: this.env.identityUrl });
    } catch (error) {
      // jsonwebtoken checks the expiry after the signature, and JwtSignerService keeps its message.
      if (error instanceof InvalidJwt) throw new InvalidState(error.message === 'jwt expired' ? EXPIRED : 'state is invalid');
      throw error;
    }
  }
}
