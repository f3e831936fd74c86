/** A table's widest line: a terminal's classic 80 columns would cut too many ids short; 100 fits most. */
export const TABLE_WIDTH = 100;
const GAP = '  ';
/** Ends a cell shortened to fit its column. */
const CUT = '…';
/** A shortened column keeps at least its header's width, and at least this much. */
const MIN_COLUMN = 8;

/**
 * A list of records as columns (`columns`, or every field), one record as field/value rows, each
 * line at most TABLE_WIDTH characters. In a list the widest cells are cut short, ending in "…";
 * ids and secrets (`id`, `*_id`, `kid`, `*secret`) are never cut, since only a whole one can be copied. The last
 * columns, when even cut short they do not fit, are left out (a last line says so), and the
 * room they leave goes to the columns kept. One record's long values wrap.
 */
export function toTable(value: unknown, columns?: string[]): string {
  const records = Array.isArray(value) ? value : [value];
  if (!records.every((record) => typeof record === 'object' && record !== null)) return records.map(cell).join('\n');
  if (!Array.isArray(value)) return fieldRows(value as Record<string, unknown>);
  if (records.length === 0) return '(none)';
  const shown = columns ?? [...new Set(records.flatMap((record) => Object.keys(record)))];
  return listRows(shown, records.map((record) => shown.map((column) => cell((record as Record<string, unknown>)[column]))));
}

function listRows(header: string[], body: string[][]): string {
  const natural = header.map((name, column) => Math.max(name.length, ...body.map((row) => row[column].length)));
  const floor = header.map((name, column) => (isWhole(name) ? natural[column] : Math.min(natural[column], Math.max(name.length, MIN_COLUMN))));
  const total = (widths: number[]) => widths.reduce((sum, width) => sum + width, 0) + GAP.length * (widths.length - 1);
  // Leave out the last columns until the others fit at their shortest, so that the room of a
  // column left out goes to the columns kept, and only then shorten those.
  let kept = header.length;
  while (kept > 1 && total(floor.slice(0, kept)) > TABLE_WIDTH) kept--;
  const dropped = header.length - kept;
  const widths = natural.slice(0, kept);
  // Shorten the widest shortenable column, one character at a time, until the line fits.
  while (total(widths) > TABLE_WIDTH) {
    const widest = widths.reduce((best, width, column) => (width > floor[column] && (best < 0 || width > widths[best]) ? column : best), -1);
    if (widest < 0) break;
    widths[widest]--;
  }
  const line = (row: string[]) => widths.map((width, column) => fit(row[column], width).padEnd(width)).join(GAP).trimEnd();
  const lines = [line(header), line(widths.map((width) => '-'.repeat(width))), ...body.map(line)];
  if (dropped > 0) lines.push(...wrap(`(${dropped} more column${dropped === 1 ? '' : 's'}: ${header.slice(-dropped).join(', ')}; --format json shows everything)`, TABLE_WIDTH));
  return lines.join('\n');
}

/** One record as `field  value` rows; a value too long for the line wraps onto indented lines. */
function fieldRows(record: Record<string, unknown>): string {
  const rows = [['field', 'value'], ...Object.entries(record).map(([field, value]) => [field, cell(value)])];
  const fieldWidth = Math.max(...rows.map(([field]) => field.length));
  const valueWidth = Math.max(TABLE_WIDTH - fieldWidth - GAP.length, MIN_COLUMN);
  const indent = ' '.repeat(fieldWidth + GAP.length);
  const lines = [`${'field'.padEnd(fieldWidth)}${GAP}value`, `${'-'.repeat(fieldWidth)}${GAP}${'-'.repeat(Math.min(valueWidth, Math.max(...rows.map(([, text]) => text.length))))}`];
  for (const [field, text] of rows.slice(1)) {
    const [first, ...rest] = wrap(text, valueWidth);
    lines.push(`${field.padEnd(fieldWidth)}${GAP}${first}`.trimEnd(), ...rest.map((part) => `${indent}${part}`));
  }
  return lines.join('\n');
}

const isWhole = (column: string) => /(^|_)id$|^kid$|secret$/.test(column);

const fit = (text: string, width: number) => (text.length <= width ? text : `${text.slice(0, width - CUT.length)}${CUT}`);

/** Breaks at spaces where it can, else inside a word. */
function wrap(text: string, width: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > width) {
    const space = rest.lastIndexOf(' ', width);
    const at = space > 0 ? space : width;
    parts.push(rest.slice(0, at));
    rest = rest.slice(space > 0 ? at + 1 : at);
  }
  return [...parts, rest];
}

/** An ISO timestamp as people read it, to the second; tables show UTC. */
const TIMESTAMP = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?Z$/;

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return cell(value.toISOString());
  if (typeof value === 'string' && TIMESTAMP.test(value)) return value.replace(TIMESTAMP, '$1 $2');
  if (Array.isArray(value)) return value.map(cell).join(' ');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
