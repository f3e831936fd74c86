import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { LRUCache } from 'lru-cache';
import { signCompactJws } from './compact-jws.js';
import { KeysService } from './keys.service.js';

/** Why a presented JWT was refused; callers map it to their own error (400, 401, inactive). */
export class InvalidJwt extends Error {}

const ALLOWED_ALGS = ['ES256', 'RS256'] as const;

/** Signing with one key, fetched beforehand: nothing in `sign` reads the database. */
export interface JwtSigning {
  sign(claims: Record<string, unknown>, options: SignOptions): Promise<string>;
}

export interface SignOptions {
  /** JOSE `typ` header: what kind of token this is (RFC 8725 §3.11 explicit typing). */
  typ: string;
  expiresInSeconds: number;
}

/** What a verified token was checked against, remembered with its claims and the key that signed it. */
interface Verified {
  claims: { exp?: unknown };
  typ: string;
  issuer?: string;
  kid: string;
}

export interface VerifiedJwt<T> {
  claims: T;
  /** The signing key's id: what a revocation of that key refers to. */
  kid: string;
}

/**
 * Verified tokens are remembered by their exact text, up to this much text: a device polls with
 * the same state, and a publisher or subscriber presents the same access token, many times, and
 * checking a signature costs more than the rest of those requests.
 */
const VERIFIED_TEXT_BYTES = 16 * 1024 * 1024;

/** Signs and verifies the service's JWTs with the shared signing keys (header: alg, typ, kid). */
@Injectable()
export class JwtSigner {
  private readonly verified = new LRUCache<string, Verified>({ maxSize: VERIFIED_TEXT_BYTES, sizeCalculation: (_value, token) => token.length });

  constructor(
    private readonly jwt: JwtService,
    private readonly keys: KeysService,
  ) {}

  /** Adds `iat` and `exp` (`iat` + the lifetime) to the claims and signs with the active key. */
  async sign(claims: Record<string, unknown>, options: SignOptions): Promise<string> {
    return (await this.prepare()).sign(claims, options);
  }

  /**
   * The active key, fetched now (a reload of the keys may fail, or wait on the database): a
   * caller that must not commit what it cannot sign prepares first, then commits, then signs.
   */
  async prepare(): Promise<JwtSigning> {
    const key = await this.keys.signingKey();
    return {
      sign: async (claims, options) => {
        const iat = Math.floor(Date.now() / 1000);
        return signCompactJws(key, options.typ, { ...claims, iat, exp: iat + options.expiresInSeconds });
      },
    };
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
    return (await this.verifyWithKid<T>(token, expected)).claims;
  }

  /** As `verify`, with the id of the key that signed the token. */
  async verifyWithKid<T extends object>(token: string, expected: { typ: string; issuer?: string }): Promise<VerifiedJwt<T>> {
    const known = this.verified.get(token);
    if (known && known.typ === expected.typ && known.issuer === expected.issuer) {
      // A revoked key's tokens are refused even when remembered: the check is in memory, no round trip.
      if (this.keys.isRevoked(known.kid)) {
        this.verified.delete(token);
        throw new InvalidJwt('signing key revoked');
      }
      // Remembered tokens still expire: the signature check is what the cache saves, not this.
      if (typeof known.claims.exp === 'number' && known.claims.exp * 1000 > Date.now()) return { claims: known.claims as T, kid: known.kid };
      this.verified.delete(token);
      throw new InvalidJwt('jwt expired');
    }
    const { claims, kid } = await this.verifySignature<T>(token, expected);
    Object.freeze(claims);
    // The key may have been revoked while its signature was being checked.
    if (this.keys.isRevoked(kid)) throw new InvalidJwt('signing key revoked');
    if (typeof (claims as Verified['claims']).exp === 'number') this.verified.set(token, { claims, typ: expected.typ, issuer: expected.issuer, kid });
    return { claims, kid };
  }

  private async verifySignature<T extends object>(token: string, expected: { typ: string; issuer?: string }): Promise<VerifiedJwt<T>> {
    const header = this.decodeHeader(token);
    if (!header || typeof header.kid !== 'string') throw new InvalidJwt('malformed token');
    if (typeof header.typ !== 'string' || header.typ.toLowerCase() !== expected.typ) throw new InvalidJwt('wrong token type');
    const key = await this.keys.verificationKey(header.kid);
    if (!key || header.alg !== key.alg) throw new InvalidJwt('unknown signing key');
    try {
      const claims = await this.jwt.verifyAsync<T>(token, {
        publicKey: key.publicKey as never, // jsonwebtoken takes a KeyObject; Nest's type only lists PEM
        algorithms: [...ALLOWED_ALGS].filter((alg) => alg === key.alg),
        issuer: expected.issuer,
      });
      return { claims, kid: header.kid };
    } catch (error) {
      throw new InvalidJwt((error as Error).message);
    }
  }
}
