import argon2 from 'argon2';

// OWASP's argon2id baseline (19 MiB, t=2, p=1): slow enough to hurt guessing, cheap enough that
// one login costs ~20 ms.
const OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const hashPassword = (password: string) => argon2.hash(password, OPTIONS);

/** False for a wrong password and for a malformed hash alike. */
export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false;
  }
}
