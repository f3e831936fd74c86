import { createPrivateKey } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import type { JWK } from 'jose';
import { Env } from '../config/env.js';
import { KeyRing, type Signer, type SigningKey, type VerificationKey } from './key-ring.js';
import { KeysRepository, type LiveKey } from './keys.repository.js';
import { PrivateKeyVaultService } from './private-key-vault.service.js';
import type { SigningAlg } from './signing-key.entity.js';

/** How long an instance trusts its copy of the keys when no notice says otherwise. */
const RING_TTL_MS = 30_000;
/** An unknown kid triggers a reload at most this often, so forged kids cannot hammer the database. */
const UNKNOWN_KID_RELOAD_MS = 5_000;

/**
 * Signing keys shared by every instance through PostgreSQL, and the kids revoked among them.
 * Revocations arrive by NOTIFY (see KeyRevocationListenerService) and with every reload of the ring, so
 * `isRevoked` answers from memory on the verification hot path.
 *
 * Which key signs is PostgreSQL's to say (SIGNS_NOW), one per algorithm: a rotated-in key is
 * published at once and signs from its `activates_at`, the old key of its algorithm until then. A
 * ring holds the private parts of the keys that signed when it was read, never of one still
 * waiting, so no instance signs with a key before its activation. A rotation's NOTIFY makes every
 * listening instance drop its ring, and a ring read before an activation is dropped by then (the
 * read says how far off it is, by the database's clock, counted from when the read was sent); the
 * next signing reads the keys again.
 * So an instance that heard the notice signs with the new key from the activation on: only a
 * signing that waits for a read already under way at that moment may still get the old key, late
 * by at most that read's round trip. One that missed it (its listener down) reads the keys when
 * it listens again, and RING_TTL_MS after its last read in any case: it switches at the
 * activation or 30 s after the rotation, whichever is later (on time with the default delay of
 * 60 s). Signing with the old key a little late is harmless: it stays published until its tokens
 * expire.
 */
@Injectable()
export class KeysService {
  private readonly logger = new Logger(KeysService.name);
  private ring: Promise<KeyRing> | null = null;
  /** The reload in flight: everyone who needs a fresh ring meanwhile shares it. */
  private loading: Promise<KeyRing> | null = null;
  private lastLoadStartedAt = 0;
  private readonly revoked = new Set<string>();
  private readonly revokedListeners: ((kid: string) => void)[] = [];

  /** SIGNING_ALG: the algorithm of access tokens and of the service's other JWTs, unless a caller names another. */
  readonly defaultAlg: SigningAlg;

  constructor(
    private readonly keys: KeysRepository,
    private readonly vault: PrivateKeyVaultService,
    env: Env,
  ) {
    this.defaultAlg = env.SIGNING_ALG as SigningAlg;
  }

  /** The key new tokens of `alg` are signed with (SIGNING_ALG's by default); never a revoked one. */
  async signingKey(alg: SigningAlg = this.defaultAlg): Promise<SigningKey> {
    let ring = await this.currentRing();
    let key = ring.signingKey(alg);
    if (key && this.revoked.has(key.kid)) {
      // Loaded before the revocation committed: the replacement key is in the next load.
      this.forgetRing();
      ring = await this.currentRing();
      key = ring.signingKey(alg);
    }
    if (!key || this.revoked.has(key.kid)) throw new Error(`cannot sign: ${ring.signingProblem(alg)}`);
    return key;
  }

  /** A published, unrevoked key by id, reloading (once for all concurrent callers) when a fresh rotation may have added it. */
  async verificationKey(kid: string): Promise<VerificationKey | undefined> {
    if (this.revoked.has(kid)) return undefined;
    let ring = await this.currentRing();
    if (!ring.verificationKey(kid)) ring = await this.ringAfterUnknownKid();
    return this.revoked.has(kid) ? undefined : ring.verificationKey(kid);
  }

  /** RFC 7517 key set: public parts only, revoked keys left out. */
  async jwks(): Promise<{ keys: JWK[] }> {
    return { keys: await this.keys.findPublishedJwks() };
  }

  /** Whether tokens signed with `kid` are refused, as far as this instance has heard: no round trip. */
  isRevoked(kid: string): boolean {
    return this.revoked.has(kid);
  }

  /** Called once per kid on this instance when it learns of a revocation (by notice, or by a reload after a lost one). */
  onRevoked(listener: (kid: string) => void): void {
    this.revokedListeners.push(listener);
  }

  /** A revocation made here or announced by another process: refuse the key at once and find its replacement. */
  keyRevoked(kid: string): void {
    this.learnRevoked(kid);
    this.forgetRing();
  }

  /** Reads the keys again, revocations included (after a listener reconnection, when notices may have been lost). */
  async refresh(): Promise<void> {
    this.forgetRing();
    await this.currentRing();
  }

  /** The keys changed (created or rotated here, or a rotation was announced): the next use reads them again. */
  forgetRing(): void {
    this.ring = null;
    this.loading = null;
  }

  private async currentRing(): Promise<KeyRing> {
    const ring = this.ring && (await this.ring);
    return ring && Date.now() < ring.freshUntil ? ring : this.reloadRing();
  }

  private ringAfterUnknownKid(): Promise<KeyRing> {
    if (this.loading) return this.loading;
    return Date.now() - this.lastLoadStartedAt > UNKNOWN_KID_RELOAD_MS ? this.reloadRing() : this.currentRing();
  }

  private reloadRing(): Promise<KeyRing> {
    if (this.loading) return this.loading;
    this.lastLoadStartedAt = Date.now();
    const loading = this.loadRing();
    this.ring = loading;
    this.loading = loading;
    const settle = (failed: boolean) => {
      if (this.loading === loading) this.loading = null;
      if (failed && this.ring === loading) this.ring = null;
    };
    loading.then(
      () => settle(false),
      () => settle(true),
    );
    return loading;
  }

  private async loadRing(): Promise<KeyRing> {
    const readAt = Date.now();
    const live = await this.keys.findLive();
    for (const key of live) if (key.revokedAt) this.learnRevoked(key.kid);
    const published = live.filter((key) => !this.revoked.has(key.kid));
    // Read again when the signing key changes (a rotation's activation: never late, as counted from
    // before the database measured it), and after RING_TTL_MS at the latest.
    const freshUntil = readAt + Math.min(RING_TTL_MS, ...live.map((key) => key.changesInMs ?? Infinity));
    const signers = new Map<SigningAlg, Signer>();
    for (const key of published) if (key.signsNow && !signers.has(key.alg)) signers.set(key.alg, this.parseSigner(key));
    return new KeyRing(published, freshUntil, signers);
  }

  private parseSigner(signer: LiveKey): Signer {
    try {
      return { key: { kid: signer.kid, alg: signer.alg, privateKey: createPrivateKey(this.vault.open(signer.kid, signer)) } };
    } catch (error) {
      // Verification goes on; signing fails with the reason (e.g. another instance added a KEK this
      // one lacks). Not logged here: at start the bootstrap reports it once, later each failed signing does.
      return { problem: (error as Error).message };
    }
  }

  private learnRevoked(kid: string): void {
    if (this.revoked.has(kid)) return;
    this.revoked.add(kid);
    for (const listener of this.revokedListeners) {
      try {
        listener(kid);
      } catch (error) {
        this.logger.error(`a listener of key revocations failed: ${(error as Error).message}`);
      }
    }
  }
}
