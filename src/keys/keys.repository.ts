import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { JWK } from 'jose';
import { DataSource, type EntityManager } from 'typeorm';
import { KeyStore, SIGNS_NOW } from './key-store.js';
import { type SigningAlg, SigningKeyEntity, type StoredPrivateKey } from './signing-key.entity.js';

/** Any constant: serialises key creation across instances and the CLI. */
const KEYS_LOCK_KEY = 7_042_002;

/** A key whose tokens may still be in use, as an instance keeps it: the private part for the signing key only. */
export interface LiveKey extends StoredPrivateKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: JWK;
  revokedAt: Date | null;
  /** Whether it is the key that signs, by PostgreSQL's clock when it was read. */
  signsNow: boolean;
  /** Milliseconds from that read until it starts or stops signing, when that is ahead (a rotation's activation). */
  changesInMs: number | null;
}

/** What keys:list shows: everything but the private part. */
export type KeyFacts = Pick<SigningKeyEntity, 'kid' | 'alg' | 'createdAt' | 'activatesAt' | 'retiredAt' | 'expiresAt' | 'revokedAt'>;

/** Not expired: the key may still sign or verify, or (revoked) its tokens would still be unexpired. */
const LIVE_KEYS_SQL = `
  WITH live AS (
    SELECT *, ${SIGNS_NOW} AS signs_now FROM signing_keys WHERE expires_at IS NULL OR expires_at > now()
  )
  SELECT kid, alg, public_jwk, revoked_at, signs_now,
         CASE WHEN signs_now THEN private_key_pem END AS private_key_pem,
         CASE WHEN signs_now THEN private_key_encrypted END AS private_key_encrypted,
         CASE WHEN revoked_at IS NULL THEN
           extract(epoch FROM least(CASE WHEN activates_at > now() THEN activates_at END, CASE WHEN retired_at > now() THEN retired_at END) - now())::float8 * 1000
         END AS changes_in_ms
  FROM live`;

@Injectable()
export class KeysRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Runs `work` in a transaction holding the key lock, so two starts never both create a key. */
  withKeyLock<T>(work: (keys: KeyStore, manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [KEYS_LOCK_KEY]);
      return work(new KeyStore(manager), manager);
    });
  }

  /** What an instance's key ring is made of (revoked keys included, so it learns of revocations too). */
  async findLive(): Promise<LiveKey[]> {
    const rows = (await this.dataSource.query(LIVE_KEYS_SQL)) as LiveKeyRow[];
    return rows.map((row) => ({
      kid: row.kid,
      alg: row.alg,
      publicJwk: row.public_jwk,
      revokedAt: row.revoked_at,
      signsNow: row.signs_now,
      changesInMs: row.changes_in_ms,
      privateKeyPem: row.private_key_pem,
      privateKeyEncrypted: row.private_key_encrypted,
    }));
  }

  /** RFC 7517 key set members: public JWKs of keys neither revoked nor expired, newest first (ES256 before RS256 when made together). */
  async findPublishedJwks(): Promise<JWK[]> {
    const keys = await this.dataSource
      .getRepository(SigningKeyEntity)
      .createQueryBuilder('key')
      .select(['key.kid', 'key.publicJwk'])
      .where('key.revoked_at IS NULL')
      .andWhere('(key.expires_at IS NULL OR key.expires_at > now())')
      .orderBy('key.created_at', 'DESC')
      .addOrderBy('key.alg', 'ASC')
      .getMany();
    return keys.map((key) => key.publicJwk);
  }

  /** Every key ever made, newest first, without private parts; and PostgreSQL's time, by which their status is judged. */
  async findAllFacts(): Promise<{ keys: KeyFacts[]; now: Date }> {
    const [keys, [{ now }]] = await Promise.all([
      this.dataSource
        .getRepository(SigningKeyEntity)
        .createQueryBuilder('key')
        .select(['key.kid', 'key.alg', 'key.createdAt', 'key.activatesAt', 'key.retiredAt', 'key.expiresAt', 'key.revokedAt'])
        .orderBy('key.created_at', 'DESC')
        .addOrderBy('key.alg', 'ASC')
        .getMany(),
      this.dataSource.query('SELECT now()') as Promise<{ now: Date }[]>,
    ]);
    return { keys, now };
  }
}

interface LiveKeyRow {
  kid: string;
  alg: SigningAlg;
  public_jwk: JWK;
  revoked_at: Date | null;
  signs_now: boolean;
  changes_in_ms: number | null;
  private_key_pem: string | null;
  private_key_encrypted: Buffer | null;
}
