import { Injectable } from '@nestjs/common';
import { compactVerify, decodeProtectedHeader } from 'jose';
import { Env } from '../config/env.js';
import { KeysService } from '../keys/keys.service.js';

/** Who an ID token the service issued names: its user and client. */
export interface IdTokenHint {
  sub: string;
  aud: string;
}

/**
 * `id_token_hint` (OpenID Connect Core §3.1.2.1, RP-Initiated Logout 1.0 §2): an ID token the
 * service signed, with a key it still publishes and has not revoked, and its own issuer. An
 * expired one is taken too, as both specifications ask: the hint names a past sign-in.
 */
@Injectable()
export class IdTokenHintsService {
  constructor(
    private readonly keys: KeysService,
    private readonly env: Env,
  ) {}

  /** The hint's user and client; undefined for anything the service did not issue as an ID token. */
  async read(token: string): Promise<IdTokenHint | undefined> {
    try {
      const header = decodeProtectedHeader(token);
      if (typeof header.kid !== 'string' || header.typ?.toLowerCase() !== 'jwt') return undefined;
      const key = await this.keys.verificationKey(header.kid);
      if (!key || header.alg !== key.alg) return undefined;
      const { payload } = await compactVerify(token, key.publicKey, { algorithms: [key.alg] });
      const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
      if (claims.iss !== this.env.identityUrl || typeof claims.sub !== 'string' || typeof claims.aud !== 'string') return undefined;
      return { sub: claims.sub, aud: claims.aud };
    } catch {
      return undefined;
    }
  }
}
