import { readNewSecret } from '../../common/cli/read-new-secret.js';
import { invalidInput } from '../../common/errors/app-error.js';
import { UPSTREAM_NEEDS_KEK, type UpstreamVaultService } from '../upstream-vault.service.js';

/**
 * The provider's client secret, from stdin's first line (typed twice without echo at a terminal);
 * an empty line means none: a public client, which signs in with PKCE alone. Without
 * KEYS_ENCRYPTION_KEY nothing is asked: the secret could not be stored.
 */
export async function readClientSecret(vault: UpstreamVaultService): Promise<string | null> {
  if (!vault.available) throw invalidInput(UPSTREAM_NEEDS_KEK);
  const secret = await readNewSecret('Client secret at the provider (empty: a public client)');
  return secret === '' ? null : secret;
}
