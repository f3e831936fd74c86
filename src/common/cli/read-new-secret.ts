import { invalidInput } from '../errors/app-error.js';
import { commandLineIo } from './command-line-io.js';
import { readSecretFromStdin } from './read-secret.js';

/**
 * A new password or other secret: the first line of piped input, or at a terminal typed twice
 * without echo, since a typo nobody saw would lock its owner out.
 */
export async function readNewSecret(prompt: string): Promise<string> {
  const secret = await readSecretFromStdin(`${prompt}: `);
  if (!commandLineIo().stdin.isTTY) return secret;
  const again = await readSecretFromStdin(`${prompt} again: `);
  if (again !== secret) throw invalidInput('the two entries do not match; nothing was changed');
  return secret;
}
