import { Injectable } from '@nestjs/common';
import { randomToken } from '../common/crypto/opaque-token.js';
import { Env } from '../config/env.js';
import { InvalidJwt, JwtSigner } from '../keys/jwt-signer.service.js';

/** Its own JOSE type, so a state can never pass as an access token or the other way round. */
export const STATE_TYP = 'vc-state+jwt';

export interface StateClaims {
  jti: string;
  client_id: string;
  redirect_url?: string;
  code_challenge?: string;
  iat: number;
  exp: number;
}

const EXPIRED = 'state has expired';

export class InvalidState extends Error {
  /** Genuine but past its lifetime, as opposed to missing, changed or another client's. */
  get expired(): boolean {
    return this.message === EXPIRED;
  }
}

/** The helper's `state`: a signed JWT, unique per call, bound to client, redirect URL and PKCE challenge. */
@Injectable()
export class StateTokens {
  constructor(
    private readonly signer: JwtSigner,
    private readonly env: Env,
  ) {}

  issue(binding: { clientId: string; redirectUrl?: string; codeChallenge?: string }): Promise<string> {
    return this.signer.sign(
      {
        iss: this.env.identityUrl,
        jti: randomToken(16),
        client_id: binding.clientId,
        ...(binding.redirectUrl ? { redirect_url: binding.redirectUrl } : {}),
        ...(binding.codeChallenge ? { code_challenge: binding.codeChallenge } : {}),
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
      // jsonwebtoken checks the expiry after the signature, and JwtSigner keeps its message.
      if (error instanceof InvalidJwt) throw new InvalidState(error.message === 'jwt expired' ? EXPIRED : 'state is invalid');
      throw error;
    }
  }
}
