import { commandLineIo, currentCommandLine, type OutputFormat } from './command-line-io.js';
import { toTable } from './table.js';

export type { OutputFormat } from './command-line-io.js';

/**
 * Takes `--format json|table` out of the arguments (every command has it, so it is read here,
 * before the command's own options); throws for another value.
 */
export function takeFormatOption(args: string[]): { args: string[]; format: OutputFormat } {
  const at = args.findIndex((arg) => arg === '--format' || arg.startsWith('--format='));
  if (at < 0) return { args, format: 'json' };
  const inline = args[at].startsWith('--format=');
  const value = inline ? args[at].slice('--format='.length) : args[at + 1];
  if (value !== 'json' && value !== 'table') throw new Error(`--format must be json or table (got ${JSON.stringify(value ?? '')})`);
  return { args: [...args.slice(0, at), ...args.slice(at + (inline ? 1 : 2))], format: value };
}

/**
 * Prints a command's result on stdout: one JSON document with every field, or with --format table
 * a table for people that fits 100 columns, showing only `tableColumns` of a list when given.
 */
export function printJson(value: unknown, tableColumns?: string[]): void {
  const text = currentCommandLine().format === 'table' ? `${toTable(value, tableColumns)}\n` : `${JSON.stringify(value, null, 2)}\n`;
  commandLineIo().stdout.write(text);
}

/** commander option parser for repeatable flags (`--grant a --grant b`). */
export const collect = (value: string, previous: string[] = []) => [...previous, value];
