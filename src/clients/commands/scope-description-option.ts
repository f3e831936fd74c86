import { invalidInput } from '../../common/errors/app-error.js';

export const SCOPE_DESCRIPTION_FLAGS = '--scope-description <scope=text>';

/**
 * `--scope-description SCOPE=TEXT`, repeatable, as an object from scope to text (split at the
 * first `=`: a scope token cannot hold one, the text may). An empty text stays empty for the
 * validation to refuse, or with `emptyRemoves` (client:update) means "remove its description": null.
 */
export function scopeDescriptionsOption(values: string[] | undefined): Record<string, string> | undefined;
export function scopeDescriptionsOption(values: string[] | undefined, emptyRemoves: true): Record<string, string | null> | undefined;
export function scopeDescriptionsOption(values: string[] | undefined, emptyRemoves = false): Record<string, string | null> | undefined {
  if (!values) return undefined;
  const descriptions: Record<string, string | null> = {};
  for (const value of values) {
    const at = value.indexOf('=');
    if (at < 1) throw invalidInput(`--scope-description takes SCOPE=TEXT, e.g. "voyages:read=See your voyages" (got ${JSON.stringify(value)})`);
    const [scope, text] = [value.slice(0, at), value.slice(at + 1)];
    if (Object.hasOwn(descriptions, scope)) throw invalidInput(`--scope-description gives scope ${JSON.stringify(scope)} twice`);
    descriptions[scope] = text === '' && emptyRemoves ? null : text;
  }
  return descriptions;
}
