import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { JWK } from 'jose';
import { Env } from '../config/env.js';
import { generateSigningKey } from './key-pair.js';
import { KeyRing, type SigningKey, type VerificationKey } from './key-ring.js';
import { KeysRepository, type KeyStore } from './keys.repository.js';
import type { SigningAlg, SigningKeyEntity } from './signing-key.entity.js';

export interface KeyView {
  kid: string;
  alg: SigningAlg;
  created_at: string;
}

/** How long an instance trusts its copy of the keys; a rotation by another process shows up within it. */
const RING_TTL_MS = 30_000;
/** An unknown kid triggers a reload at most this often, so forged kids cannot hammer the database. */
const UNKNOWN_KID_RELOAD_MS = 5_000;

/** Signing keys shared by every instance through PostgreSQL. */
@Injectable()
export class KeysService implements OnApplicationBootstrap {
  private readonly logger = new Logger(KeysService.name);
  private ring: Promise<KeyRing> | null = null;

  constructor(
    private readonly keys: KeysRepository,
    private readonly env: Env,
  ) {}

  /** First start creates a key; a changed SIGNING_ALG replaces the active key with one of that algorithm. */
  async onApplicationBootstrap(): Promise<void> {
    const created = await this.keys.withKeyLock(async (store) => {
      const active = await store.findActive();
      return active?.alg === this.env.SIGNING_ALG ? null : this.replaceActiveKey(store, active);
    });
    if (created) this.logger.log(`created ${created.alg} signing key ${created.kid}`);
  }

  /** A new key signs from now on; the old one stays published until its last token expires. */
  async rotate(): Promise<KeyView & { retired: { kid: string; expires_at: string } | null }> {
    const rotated = await this.keys.withKeyLock(async (store) => {
      const active = await store.findActive();
      const retiredExpiry = this.retiredKeyExpiry();
      const key = await this.replaceActiveKey(store, active, retiredExpiry);
      return { ...toView(key), retired: active ? { kid: active.kid, expires_at: retiredExpiry.toISOString() } : null };
    });
    this.ring = null; // this instance signs with the new key at once; others within RING_TTL_MS
    return rotated;
  }

  /** The key new tokens are signed with. */
  async signingKey(): Promise<SigningKey> {
    const ring = await this.currentRing();
    if (!ring.signing) throw new Error('no active signing key');
    return ring.signing;
  }

  /** A published key by id, reloading once when a fresh rotation may have added it. */
  async verificationKey(kid: string): Promise<VerificationKey | undefined> {
    let ring = await this.currentRing();
    if (!ring.verificationKey(kid) && Date.now() - ring.loadedAt > UNKNOWN_KID_RELOAD_MS) ring = await this.reloadRing();
    return ring.verificationKey(kid);
  }

  /** RFC 7517 key set: public parts only. */
  async jwks(): Promise<{ keys: JWK[] }> {
    const keys = await this.keys.findPublished();
    return { keys: keys.map((key) => key.publicJwk) };
  }

  private async currentRing(): Promise<KeyRing> {
    const ring = this.ring && (await this.ring);
    return ring && Date.now() - ring.loadedAt < RING_TTL_MS ? ring : this.reloadRing();
  }

  private reloadRing(): Promise<KeyRing> {
    const loading = this.keys.findPublished().then((keys) => new KeyRing(keys));
    this.ring = loading;
    loading.catch(() => {
      if (this.ring === loading) this.ring = null;
    });
    return loading;
  }

  private async replaceActiveKey(store: KeyStore, active: SigningKeyEntity | null, retiredExpiry = this.retiredKeyExpiry()) {
    if (active) await store.retire(active.kid, retiredExpiry);
    return store.insert(await generateSigningKey(this.env.SIGNING_ALG as SigningAlg));
  }

  private retiredKeyExpiry() {
    return new Date(Date.now() + this.env.longestSignedLifetime * 1000);
  }
}

const toView = (key: SigningKeyEntity): KeyView => ({ kid: key.kid, alg: key.alg, created_at: key.createdAt.toISOString() });
