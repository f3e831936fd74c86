/**
 * The text of an `error_description`, in the JSON body of an OAuth error (RFC 6749 §5.2) and in a
 * `WWW-Authenticate: Bearer` challenge (RFC 6750 §3): both allow %x20-21 / %x23-5B / %x5D-7E
 * only, printable ASCII without `"` and `\`. A description may quote the request (a grant_type,
 * a parameter name, a scope), so every other character is percent-encoded as its UTF-8 bytes —
 * the way a form body carries it — and `%` too, so a quote reads back unambiguously. The result is
 * cut at MAX_DESCRIPTION_LENGTH characters: a very long value is not echoed whole.
 */
export const MAX_DESCRIPTION_LENGTH = 200;

const REFUSED = /[^\x20\x21\x23\x24\x26-\x5B\x5D-\x7E]+/g;
const ELLIPSIS = '...';

export function errorDescription(text: string): string {
  const allowed = text.replace(REFUSED, percentEncoded);
  if (allowed.length <= MAX_DESCRIPTION_LENGTH) return allowed;
  // Cut before an escape the limit would split: "%2" alone would read as a different character.
  return allowed.slice(0, MAX_DESCRIPTION_LENGTH - ELLIPSIS.length).replace(/%[0-9A-F]?$/, '') + ELLIPSIS;
}

// A lone surrogate becomes U+FFFD's bytes: Buffer.from writes well-formed UTF-8 only.
const percentEncoded = (run: string) =>
  [...Buffer.from(run, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
