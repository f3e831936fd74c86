import { randomInt } from 'node:crypto';

/**
 * The code a user types on the verification page (RFC 8628 §6.1): 8 characters from 20
 * consonants, about 34.5 bits. No vowels, so no words; no digits, so nothing to mistake for a
 * letter; upper case, so it reads the same on any screen.
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

const USER_CODE = new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`);

/** A fresh user code, as stored: 8 letters, no dash. */
export function generateUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** As the device shows it: `XXXX-XXXX`. */
export const displayUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

/** What a user typed, without what is ignored: case, spaces and dashes (any Unicode space or dash: a phone keyboard may turn `-` into `‑` or `–`). */
const stripUserCode = (typed: string) => typed.replace(/[\s\p{Pd}]/gu, '').toUpperCase();

/** What a user typed, as stored; null when it cannot be a user code at all (so it is refused without a query). */
export function normalizeUserCode(typed: string): string | null {
  if (typed.length > 64) return null;
  const code = stripUserCode(typed);
  return USER_CODE.test(code) ? code : null;
}

/** Why what a user typed cannot be a user code: its length, or the characters no code has. */
export type UserCodeFlaw = { length: number } | { foreign: string[] };

/** The flaw of what a user typed; null when it can be a user code. */
export function userCodeFlaw(typed: string): UserCodeFlaw | null {
  if (typed.length > 64) return { length: typed.length };
  const code = stripUserCode(typed);
  const length = [...code].length;
  if (length !== USER_CODE_LENGTH) return { length };
  const foreign = [...new Set([...code].filter((char) => !USER_CODE_ALPHABET.includes(char)))];
  return foreign.length ? { foreign } : null;
}
