import { readNewSecret } from '../../common/cli/read-new-secret.js';

/**
 * The provider's client secret, from stdin's first line (typed twice without echo at a terminal);
 * an empty line means none: a public client, which signs in with PKCE alone.
 */
export async function readClientSecret(): Promise<string | null> {
  const secret = await readNewSecret('Client secret at the provider (empty: a public client)');
  return secret === '' ? null : secret;
}
