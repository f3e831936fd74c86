import { toTable } from './table.js';

/** How results are printed: JSON for scripts (the default), a table for people. */
export type OutputFormat = 'json' | 'table';

let format: OutputFormat = 'json';

/**
 * Takes `--format json|table` out of the arguments (every command has it, so it is read here,
 * before the command's own options); throws for another value.
 */
export function takeFormatOption(argv: string[]): string[] {
  const at = argv.findIndex((arg) => arg === '--format' || arg.startsWith('--format='));
  if (at < 0) return argv;
  const inline = argv[at].startsWith('--format=');
  const value = inline ? argv[at].slice('--format='.length) : argv[at + 1];
  if (value !== 'json' && value !== 'table') throw new Error(`--format must be json or table (got ${JSON.stringify(value ?? '')})`);
  format = value;
  return [...argv.slice(0, at), ...argv.slice(at + (inline ? 1 : 2))];
}

/**
 * Prints a command's result on stdout: one JSON document with every field, or with --format table
 * a table for people that fits 100 columns, showing only `tableColumns` of a list when given.
 */
export function printJson(value: unknown, tableColumns?: string[]): void {
  process.stdout.write(format === 'table' ? `${toTable(value, tableColumns)}\n` : `${JSON.stringify(value, null, 2)}\n`);
}

/** commander option parser for repeatable flags (`--grant a --grant b`). */
export const collect = (value: string, previous: string[] = []) => [...previous, value];
