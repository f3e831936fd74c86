import { generateSigningKey } from './key-pair.js';
import type { NewKey } from './key-store.js';
import type { PrivateKeyVaultService } from './private-key-vault.service.js';
import type { SigningAlg } from './signing-key.entity.js';

/** A fresh key pair ready to insert: its private part sealed when `encrypted`, its PEM kept nowhere else. */
export async function newSigningKey(vault: PrivateKeyVaultService, alg: SigningAlg, retiredLifetimeSeconds: number, encrypted: boolean): Promise<NewKey> {
  const { privateKeyPem, ...generated } = await generateSigningKey(alg);
  return { ...generated, ...vault.store(generated.kid, privateKeyPem, encrypted), retiredLifetimeSeconds };
}
