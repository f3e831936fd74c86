import { OptionMeta } from 'nest-commander/src/constants.js';
import { invalidInput } from '../errors/app-error.js';

interface DeclaredOption {
  /** The key commander gives the command (`scopeDescription` for `--scope-description`). */
  attribute: string;
  takesValue: boolean;
  parse: (value?: string, previous?: unknown) => unknown;
}

/**
 * A command's options read from a JSON object instead of the command line (one line of a file, say):
 * each field is named as its option's flag without the dashes (`grant` for `--grant`), holds a
 * string, an array of strings for a repeated option, or true for a flag; each value goes through
 * the option's own parser, so both ways are read by the same rules. The flags in `except` are
 * not fields. Throws invalid_input.
 */
export function optionsFromRecord(command: object, record: unknown, except: string[] = []): Record<string, unknown> {
  if (typeof record !== 'object' || record === null || Array.isArray(record)) throw invalidInput('must be a JSON object');
  const declared = declaredOptions(command);
  for (const flag of except) declared.delete(flag);
  const options: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(record)) {
    const option = declared.get(field);
    if (!option) throw invalidInput(`unknown field "${field}" (fields: ${[...declared.keys()].join(', ')})`);
    if (!option.takesValue) {
      if (value !== true) throw invalidInput(`"${field}" must be true`);
      options[option.attribute] = option.parse();
      continue;
    }
    const values: unknown[] = Array.isArray(value) ? value : [value];
    if (values.length === 0 || !values.every((item) => typeof item === 'string')) throw invalidInput(`"${field}" must be a string or an array of strings`);
    options[option.attribute] = (values as string[]).reduce<unknown>((previous, item) => option.parse(item, previous), undefined);
  }
  return options;
}

/** The options declared with nest-commander's @Option on the command's class (and its base classes), by flag name. */
function declaredOptions(command: object): Map<string, DeclaredOption> {
  const declared = new Map<string, DeclaredOption>();
  for (let prototype = Object.getPrototypeOf(command); prototype && prototype !== Object.prototype; prototype = Object.getPrototypeOf(prototype)) {
    for (const key of Object.getOwnPropertyNames(prototype)) {
      const method = Object.getOwnPropertyDescriptor(prototype, key)?.value;
      const meta: { flags: string } | undefined = typeof method === 'function' ? Reflect.getMetadata(OptionMeta, method) : undefined;
      const flag = meta && /--([a-z][\w-]*)(\s+<)?/.exec(meta.flags);
      if (!flag || declared.has(flag[1])) continue;
      const attribute = flag[1].replace(/-([a-z])/g, (_dash, letter: string) => letter.toUpperCase());
      declared.set(flag[1], { attribute, takesValue: flag[2] !== undefined, parse: (...args) => method.apply(command, args) });
    }
  }
  return declared;
}
