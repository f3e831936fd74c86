import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager, IsNull } from 'typeorm';
import type { GeneratedKey } from './key-pair.js';
import { SigningKeyEntity } from './signing-key.entity.js';

/** Any constant: serialises key creation across instances and the CLI. */
const KEYS_LOCK_KEY = 7_042_002;

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

  /** Keys whose tokens may still be in use: the active one and retired ones not yet expired. */
  findPublished(): Promise<SigningKeyEntity[]> {
    return this.dataSource
      .getRepository(SigningKeyEntity)
      .createQueryBuilder('key')
      .where('key.expires_at IS NULL OR key.expires_at > now()')
      .orderBy('key.created_at', 'DESC')
      .getMany();
  }
}

/** Key queries inside the locked transaction. */
export class KeyStore {
  constructor(private readonly manager: EntityManager) {}

  findActive(): Promise<SigningKeyEntity | null> {
    return this.manager.findOneBy(SigningKeyEntity, { retiredAt: IsNull() });
  }

  async retire(kid: string, expiresAt: Date): Promise<void> {
    await this.manager.update(SigningKeyEntity, { kid }, { retiredAt: new Date(), expiresAt });
  }

  async insert(key: GeneratedKey): Promise<SigningKeyEntity> {
    await this.manager.insert(SigningKeyEntity, { ...key, retiredAt: null, expiresAt: null });
    return this.manager.findOneByOrFail(SigningKeyEntity, { kid: key.kid });
  }
}
