/**
 * A connection URL as it may be shown (errors, logs): without its password, also one given as a
 * `password` query parameter. Something that is no URL at all is shown as its scheme only.
 */
export function withoutPassword(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return /^[a-z][\w+.-]*:/i.exec(url)?.[0] ?? '(not a URL)';
  }
  if (parsed.password) parsed.password = '';
  parsed.searchParams.delete('password');
  return parsed.toString();
}
