import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { signCompactJws } from './compact-jws.js';
import { KeysService } from './keys.service.js';

/** Why a presented JWT was refused; callers map it to their own error (400, 401, inactive). */
export class InvalidJwt extends Error {}

const ALLOWED_ALGS = ['ES256', 'RS256'] as const;

export interface SignOptions {
  /** JOSE `typ` header: what kind of token this is (RFC 8725 §3.11 explicit typing). */
  typ: string;
  expiresInSeconds: number;
}

/** Signs and verifies the service's JWTs with the shared signing keys (header: alg, typ, kid). */
@Injectable()
export class JwtSigner {
  constructor(
    private readonly jwt: JwtService,
    private readonly keys: KeysService,
  ) {}

  /** Adds `iat` and `exp` (`iat` + the lifetime) to the claims and signs with the active key. */
  async sign(claims: Record<string, unknown>, options: SignOptions): Promise<string> {
    const key = await this.keys.signingKey();
    const iat = Math.floor(Date.now() / 1000);
    return signCompactJws(key, options.typ, { ...claims, iat, exp: iat + options.expiresInSeconds });
  }

  /** The JOSE header, or null for anything that does not decode (jws throws SyntaxError on a non-JSON payload). */
  private decodeHeader(token: string): { typ?: unknown; kid?: unknown; alg?: unknown } | null {
    try {
      return this.jwt.decode<{ header?: { typ?: unknown; kid?: unknown; alg?: unknown } } | null>(token, { complete: true })?.header ?? null;
    } catch {
      return null;
    }
  }

  /**
   * Verifies signature (published asymmetric keys only, so `none` and HMAC confusion are
   * refused), `typ`, expiry and, when given, issuer. Returns the claims.
   */
  async verify<T extends object>(token: string, expected: { typ: string; issuer?: string }): Promise<T> {
    const header = this.decodeHeader(token);
    if (!header || typeof header.kid !== 'string') throw new InvalidJwt('malformed token');
    if (typeof header.typ !== 'string' || header.typ.toLowerCase() !== expected.typ) throw new InvalidJwt('wrong token type');
    const key = await this.keys.verificationKey(header.kid);
    if (!key || header.alg !== key.alg) throw new InvalidJwt('unknown signing key');
    try {
      return await this.jwt.verifyAsync<T>(token, {
        publicKey: key.publicKey as never, // jsonwebtoken takes a KeyObject; Nest's type only lists PEM
        algorithms: [...ALLOWED_ALGS].filter((alg) => alg === key.alg),
        issuer: expected.issuer,
      });
    } catch (error) {
      throw new InvalidJwt((error as Error).message);
    }
  }
}
