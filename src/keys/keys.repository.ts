import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { JWK } from 'jose';
import { DataSource } from 'typeorm';
import { KeyStore } from './key-store.js';
import { type SigningAlg, SigningKeyEntity, type StoredPrivateKey } from './signing-key.entity.js';

/** Any constant: serialises key creation across instances and the CLI. */
const KEYS_LOCK_KEY = 7_042_002;

/** A key whose tokens may still be in use, as an instance keeps it: the private part for the active key only. */
export interface LiveKey extends StoredPrivateKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: JWK;
  retiredAt: Date | null;
  revokedAt: Date | null;
}

/** What keys:list shows: everything but the private part. */
export type KeyFacts = Pick<SigningKeyEntity, 'kid' | 'alg' | 'createdAt' | 'retiredAt' | 'expiresAt' | 'revokedAt'>;

/** Not expired: the key may still sign or verify, or (revoked) its tokens would still be unexpired. */
const LIVE_KEYS_SQL = `
  SELECT kid, alg, public_jwk, retired_at, revoked_at,
         CASE WHEN retired_at IS NULL THEN private_key_pem END AS private_key_pem,
         CASE WHEN retired_at IS NULL THEN private_key_encrypted END AS private_key_encrypted
  FROM signing_keys
  WHERE expires_at IS NULL OR expires_at > now()`;

@Injectable()
export class KeysRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Runs `work` in a transaction holding the key lock, so two starts never both create a key. */
  withKeyLock<T>(work: (keys: KeyStore) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [KEYS_LOCK_KEY]);
      return work(new KeyStore(manager));
    });
  }

  /** What an instance's key ring is made of (revoked keys included, so it learns of revocations too). */
  async findLive(): Promise<LiveKey[]> {
    const rows = (await this.dataSource.query(LIVE_KEYS_SQL)) as LiveKeyRow[];
    return rows.map((row) => ({
      kid: row.kid,
      alg: row.alg,
      publicJwk: row.public_jwk,
      retiredAt: row.retired_at,
      revokedAt: row.revoked_at,
      privateKeyPem: row.private_key_pem,
      privateKeyEncrypted: row.private_key_encrypted,
    }));
  }

  /** RFC 7517 key set members: public JWKs of keys neither revoked nor expired, newest first. */
  async findPublishedJwks(): Promise<JWK[]> {
    const keys = await this.dataSource
      .getRepository(SigningKeyEntity)
      .createQueryBuilder('key')
      .select(['key.kid', 'key.publicJwk'])
      .where('key.revoked_at IS NULL')
      .andWhere('(key.expires_at IS NULL OR key.expires_at > now())')
      .orderBy('key.created_at', 'DESC')
      .getMany();
    return keys.map((key) => key.publicJwk);
  }

  /** Every key ever made, newest first, without private parts. */
  findAllFacts(): Promise<KeyFacts[]> {
    return this.dataSource
      .getRepository(SigningKeyEntity)
      .createQueryBuilder('key')
      .select(['key.kid', 'key.alg', 'key.createdAt', 'key.retiredAt', 'key.expiresAt', 'key.revokedAt'])
      .orderBy('key.created_at', 'DESC')
      .getMany();
  }
}

interface LiveKeyRow {
  kid: string;
  alg: SigningAlg;
  public_jwk: JWK;
  retired_at: Date | null;
  revoked_at: Date | null;
  private_key_pem: string | null;
  private_key_encrypted: Buffer | null;
}
