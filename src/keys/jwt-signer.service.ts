import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { LRUCache } from 'lru-cache';
import { signCompactJws } from './compact-jws.js';
import type { SigningKey } from './key-ring.js';
import { KeysService } from './keys.service.js';
import type { SigningAlg } from './signing-key.entity.js';

/** Why a presented JWT was refused; callers map it to their own error (400, 401, inactive). */
export class InvalidJwt extends Error {}

const ALLOWED_ALGS = ['ES256', 'RS256'] as const;

/**
 * Signing with keys fetched beforehand (SIGNING_ALG's, and those of the algorithms `prepare` was
 * given): nothing in `sign` reads the database. Signing with an algorithm that was not prepared
 * is a programming error, and throws.
 */
export interface JwtSigning {
  sign(claims: Record<string, unknown>, options: SignOptions): Promise<string>;
}

export interface SignOptions {
  /** JOSE `typ` header, as given: what kind of token this is (RFC 8725 §3.11 explicit typing; `JWT` for ID tokens). */
  typ: string;
  expiresInSeconds: number;
  /** The key's algorithm; SIGNING_ALG (the access tokens') when absent. ID tokens pass their client's. */
  alg?: SigningAlg;
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
export class JwtSignerService {
  private readonly verified = new LRUCache<string, Verified>({ maxSize: VERIFIED_TEXT_BYTES, sizeCalculation: (_value, token) => token.length });

  constructor(
    private readonly jwt: JwtService,
    private readonly keys: KeysService,
  ) {}

  /** Adds `iat` and `exp` (`iat` + the lifetime) to the claims and signs with the active key of `options.alg` (default SIGNING_ALG). */
  async sign(claims: Record<string, unknown>, options: SignOptions): Promise<string> {
    return this.signWith(await this.keys.signingKey(options.alg ?? this.keys.defaultAlg), claims, options);
  }

  /**
   * The active keys of SIGNING_ALG and of `alsoAlgs`, fetched now (a reload of the keys may fail,
   * or wait on the database): a caller that must not commit what it cannot sign prepares first,
   * then commits, then signs (an ID token's caller adds its client's algorithm).
   */
  async prepare(alsoAlgs: readonly SigningAlg[] = []): Promise<JwtSigning> {
    const algs = [...new Set([this.keys.defaultAlg, ...alsoAlgs])];
    const keys = new Map(await Promise.all(algs.map(async (alg) => [alg, await this.keys.signingKey(alg)] as const)));
    return {
      sign: async (claims, options) => {
        const alg = options.alg ?? this.keys.defaultAlg;
        const key = keys.get(alg);
        if (!key) throw new Error(`no ${alg} key was prepared: pass ${alg} to JwtSignerService.prepare`);
        return this.signWith(key, claims, options);
      },
    };
  }

  private signWith(key: SigningKey, claims: Record<string, unknown>, options: SignOptions): string {
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
    // Media types compare case-insensitively (RFC 7515 §4.1.9): an ID token's `JWT` is `jwt`.
    if (typeof header.typ !== 'string' || header.typ.toLowerCase() !== expected.typ.toLowerCase()) throw new InvalidJwt('wrong token type');
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
