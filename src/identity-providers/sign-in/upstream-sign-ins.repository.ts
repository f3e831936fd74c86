import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** What a sign-in at a provider is for, so its callback knows how to go on. */
export type SignInPurpose =
  /** The helper's sign-in link: its state JWT, checked again at the callback. */
  | { kind: 'helper'; state: string; clientId: string }
  /** The device verification page: the user code being connected. */
  | { kind: 'device'; userCode: string; clientId: string };

export interface StartedSignIn {
  stateHash: Buffer;
  provider: string;
  browserHash: Buffer;
  nonce: string;
  codeVerifierSealed: Buffer;
  purpose: SignInPurpose;
  expiresAt: Date;
}

/**
 * A sign-in the callback may finish: taken once, by the browser that started it. It counts from
 * `startedAt`: a sign-out of its user since then voids it (revocations.ts).
 */
export type TakenSignIn = Pick<StartedSignIn, 'provider' | 'nonce' | 'codeVerifierSealed' | 'purpose'> & { startedAt: Date };

/** Why a callback's state was not taken. */
export type UntakenReason = 'unknown' | 'used' | 'expired' | 'other_browser';

/** Round trips to a provider in flight (upstream_sign_ins), keyed by the hash of their `state`. */
@Injectable()
export class UpstreamSignInsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async insert(signIn: StartedSignIn): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO upstream_sign_ins (state_hash, provider, browser_hash, nonce, code_verifier_sealed, purpose, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [signIn.stateHash, signIn.provider, signIn.browserHash, signIn.nonce, signIn.codeVerifierSealed, JSON.stringify(signIn.purpose), signIn.expiresAt],
    );
  }

  /**
   * Marks the sign-in used and returns it, in one statement, when it is this provider's, unused,
   * unexpired and this browser's; otherwise why not (a foreign browser leaves it usable by its own).
   */
  async take(stateHash: Buffer, provider: string, browserHash: Buffer | null): Promise<TakenSignIn | UntakenReason> {
    // An UPDATE answers [rows, affected].
    const [[taken]]: [{ provider: string; nonce: string; code_verifier_sealed: Buffer; purpose: SignInPurpose; started_at: Date }[], number] = await this.dataSource.query(
      `UPDATE upstream_sign_ins SET used_at = now()
       WHERE state_hash = $1 AND provider = $2 AND browser_hash = $3 AND used_at IS NULL AND expires_at > now()
       RETURNING provider, nonce, code_verifier_sealed, purpose, started_at`,
      [stateHash, provider, browserHash ?? Buffer.alloc(0)],
    );
    if (taken) return { provider: taken.provider, nonce: taken.nonce, codeVerifierSealed: taken.code_verifier_sealed, purpose: taken.purpose, startedAt: taken.started_at };
    const [found]: { used: boolean; expired: boolean }[] = await this.dataSource.query(
      'SELECT used_at IS NOT NULL AS used, expires_at <= now() AS expired FROM upstream_sign_ins WHERE state_hash = $1 AND provider = $2',
      [stateHash, provider],
    );
    if (!found) return 'unknown';
    if (found.used) return 'used';
    if (found.expired) return 'expired';
    return 'other_browser';
  }

  /** Round trips to a provider never finished, past their life. Up to `limit` rows; returns how many were deleted (a housekeeping purge). */
  async purgeExpired(limit: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM upstream_sign_ins WHERE ctid IN (SELECT ctid FROM upstream_sign_ins WHERE expires_at < now() LIMIT $1)`,
      [limit],
    );
    return deleted;
  }
}
