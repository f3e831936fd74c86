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

/** Prints a command's result on stdout: one JSON document, or with --format table a table for people. */
export function printJson(value: unknown): void {
  process.stdout.write(format === 'table' ? `${table(value)}\n` : `${JSON.stringify(value, null, 2)}\n`);
}

/** commander option parser for repeatable flags (`--grant a --grant b`). */
export const collect = (value: string, previous: string[] = []) => [...previous, value];

/** A list of records as columns, one record as field/value rows; lists inside a cell joined by spaces. */
function table(value: unknown): string {
  const records = Array.isArray(value) ? value : [value];
  if (!records.every((record) => typeof record === 'object' && record !== null)) return records.map(cell).join('\n');
  const rows = Array.isArray(value)
    ? [columnsOf(records), ...records.map((record) => columnsOf(records).map((column) => cell((record as Record<string, unknown>)[column])))]
    : [['field', 'value'], ...Object.entries(value as Record<string, unknown>).map(([field, fieldValue]) => [field, cell(fieldValue)])];
  if (rows.length === 1) return '(none)';
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row: string[]) => row.map((text, column) => text.padEnd(widths[column])).join('  ').trimEnd();
  return [line(rows[0]), line(widths.map((width) => '-'.repeat(width))), ...rows.slice(1).map(line)].join('\n');
}

const columnsOf = (records: object[]) => [...new Set(records.flatMap((record) => Object.keys(record)))];

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(cell).join(' ');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
