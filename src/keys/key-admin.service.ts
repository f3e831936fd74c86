import { Injectable, Logger } from '@nestjs/common';
import { AuditTrailService } from '../audit/audit-trail.service.js';
import { conflict, notFound } from '../common/errors/app-error.js';
import { Env } from '../config/env.js';
import type { KeyStore } from './key-store.js';
import { type KeyView, toKeyView, toNewKeyView } from './key-views.js';
import { KeysRepository } from './keys.repository.js';
import { KeysService } from './keys.service.js';
import { newSigningKey } from './new-signing-key.js';
import { PrivateKeyVaultService } from './private-key-vault.service.js';
import { SIGNING_ALGS, type SigningAlg, type SigningKeyEntity } from './signing-key.entity.js';

type NewKeyView = ReturnType<typeof toNewKeyView>;

export interface RotateResult extends NewKeyView {
  /** The key that signs until `activates_at`, and stays published until `expires_at`. */
  retired: { kid: string; expires_at: string };
}

export interface RevokeResult extends KeyView {
  /** True when the key had been revoked before: nothing changed, the notice was sent again. */
  already_revoked: boolean;
  /** The key that signs from now on, when the revoked key was the signing one. */
  replaced_by: NewKeyView | null;
}

/**
 * What operators do to the keys from the CLI. Explicit only: nothing here runs at start, and the
 * algorithm and lifetime of a new key are the stored ones (the service's), never the CLI's env.
 */
@Injectable()
export class KeyAdminService {
  private readonly logger = new Logger(KeyAdminService.name);

  constructor(
    private readonly repository: KeysRepository,
    private readonly vault: PrivateKeyVaultService,
    private readonly keys: KeysService,
    private readonly env: Env,
    private readonly audit: AuditTrailService,
  ) {}

  async list(): Promise<KeyView[]> {
    const { keys, now } = await this.repository.findAllFacts();
    return keys.map((key) => toKeyView(key, now));
  }

  /**
   * For each algorithm (or only `alg`), a new key, published at once and signing after
   * KEY_ACTIVATION_DELAY; the old key of that algorithm signs until then and stays published until
   * its last token expires. All in one transaction: one rotation replaces all signing material.
   * One rotation at a time per algorithm: while a rotated key waits to sign, another rotation of
   * its algorithm is refused, changing nothing.
   */
  async rotate(alg?: SigningAlg): Promise<RotateResult[]> {
    const rotated = await this.repository.withKeyLock(async (store, manager) => {
      const algs = alg ? [alg] : SIGNING_ALGS;
      for (const each of algs) {
        const pending = await store.findPending(each);
        if (pending) {
          throw conflict(`key ${pending.kid} already waits to sign, from ${pending.activatesAt.toISOString()}: rotate again once it signs`);
        }
      }
      // Before a service of this version has started, a database may hold a key of one algorithm only.
      const newest = (await Promise.all(algs.map((each) => store.findNewest(each)))).filter((key) => key !== null);
      if (newest.length < algs.length && (alg || newest.length === 0)) {
        throw new Error(`no active ${alg ? `${alg} ` : ''}signing key to rotate: the service creates one when it starts`);
      }
      // RSA keys take tens of milliseconds to make: make them together, then store them in order.
      const successors = await Promise.all(newest.map((key) => newSigningKey(this.vault, key.alg, key.retiredLifetimeSeconds, this.encryptsLike(key))));
      const results: RotateResult[] = [];
      for (const [index, old] of newest.entries()) {
        const { key, retired } = await store.rotate(old, successors[index], this.env.KEY_ACTIVATION_DELAY);
        results.push({ ...toNewKeyView(key), retired: { kid: retired.kid, expires_at: retired.expiresAt!.toISOString() } });
        await this.audit.record(manager, { action: 'key.rotated', target: key.kid, details: { alg: key.alg, retired: retired.kid } });
      }
      return results;
    });
    this.keys.forgetRing(); // other instances reload on the notice
    return rotated;
  }

  /**
   * The emergency path after a key is stolen: it leaves the JWKS and every token it signed is
   * refused, on every instance at once (the notice is sent in the same transaction). A signing
   * key is replaced in that transaction: by the key of its algorithm a rotation already published,
   * if one waits, else by a new one of the same algorithm. A waiting key revoked before it signs
   * undoes its rotation: the signing key of its algorithm signs on. The other algorithm's keys are
   * untouched. Revoking a revoked key changes nothing and succeeds (the notice goes out again), so
   * the command can simply be re-run.
   */
  async revoke(kid: string): Promise<RevokeResult> {
    // kids are JWK thumbprints (RFC 7638): anything else, NUL included, is no key, asked without a query.
    if (!/^[\x21-\x7e]{1,256}$/.test(kid)) throw notFound(`no signing key with kid ${JSON.stringify(kid)}`);
    const result = await this.repository.withKeyLock(async (store, manager) => {
      const revoked = await this.revokeLocked(store, kid);
      await this.audit.record(manager, {
        action: 'key.revoked',
        target: kid,
        details: { already_revoked: revoked.already_revoked, replaced_by: revoked.replaced_by?.kid ?? null },
      });
      return revoked;
    });
    this.keys.keyRevoked(kid);
    this.audit.tellAtCli('key.revoked', { reason: 'cli', kid, alreadyRevoked: result.already_revoked, replacedBy: result.replaced_by?.kid ?? null });
    return result;
  }

  /** revoke's change, under the key lock. */
  private async revokeLocked(store: KeyStore, kid: string): Promise<RevokeResult> {
    const key = await store.findByKid(kid);
    if (!key) throw notFound(`no signing key with kid "${kid}"`);
    if (key.revokedAt) {
      await store.notifyRevoked(kid);
      return { ...revokedView(key), already_revoked: true, replaced_by: null };
    }
    const [signing, pending] = [await store.findSigning(key.alg), await store.findPending(key.alg)];
    const replaced = signing?.kid === kid ? signing : null;
    const encrypted = replaced && !pending ? this.encryptsLike(replaced) : false; // checked before anything changes
    const revoked = await store.revoke(kid);
    let replacement: SigningKeyEntity | null = null;
    if (replaced) replacement = pending ? await store.activateNow(pending.kid) : await this.successorOf(store, replaced, encrypted);
    else if (pending?.kid === kid && signing) await store.keepSigning(signing.kid);
    await store.notifyRevoked(kid);
    return { ...revokedView(revoked), already_revoked: false, replaced_by: replacement && toNewKeyView(replacement) };
  }

  /** Whether a new key beside `active` is sealed (see PrivateKeyVaultService.encryptsLike), saying so when the KEK goes unused. */
  private encryptsLike(active: SigningKeyEntity): boolean {
    const encrypted = this.vault.encryptsLike(active);
    if (!encrypted && this.vault.hasKek) {
      this.logger.warn('the stored signing keys are not encrypted yet, so the new key is not either: start the service with KEYS_ENCRYPTION_KEY to encrypt them');
    }
    return encrypted;
  }

  /** A key like `active` (algorithm, lifetime, encrypted or not) that signs in its place at once. */
  private async successorOf(store: KeyStore, active: SigningKeyEntity, encrypted: boolean) {
    return store.insert(await newSigningKey(this.vault, active.alg, active.retiredLifetimeSeconds, encrypted), 0);
  }
}

/** A revoked key's view: its status is `revoked` whatever the time. */
const revokedView = (key: SigningKeyEntity) => toKeyView(key, key.revokedAt!);
