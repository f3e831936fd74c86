import { describe, expect, it } from 'vitest';
import { toTable } from '../../../src/common/cli/table.js';

const widths = (table: string) => table.split('\n').map((line) => line.length);
const redirects = Array.from({ length: 12 }, (_, index) => `http://192.168.${index}.0/24:*/callback/with/a/long/path`);
const client = (index: number) => ({
  client_id: `client-id-${index}-`.padEnd(22, 'x'),
  name: `A client with a rather long display name number ${index}`,
  grants: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
  redirect_patterns: redirects,
  created_at: '2026-11-25T21:59:17.388Z',
});

describe('CLI tables', () => {
  it('fit a list of long records in 100 columns, cutting long cells with "…" but never an id or a secret', () => {
    const table = toTable([client(1), client(2)]);
    expect(Math.max(...widths(table))).toBeLessThanOrEqual(100);
    const [header, rule, first] = table.split('\n');
    expect(header.split(/\s{2,}/)).toEqual(['client_id', 'name', 'grants', 'redirect_patterns', 'created_at']);
    expect(rule).toMatch(/^[- ]+$/);
    expect(first).toContain(client(1).client_id);
    expect(first).toMatch(/…/);

    const secrets = toTable([{ client_id: client(1).client_id, client_secret: 'S'.repeat(43), name: 'n'.repeat(80) }]);
    expect(Math.max(...widths(secrets))).toBeLessThanOrEqual(100);
    expect(secrets.split('\n')[2]).toMatch(/^[\w-]{22} {2}S{43} {2}n+…$/);
  });

  it('show only the columns a command chose, in its order', () => {
    const table = toTable([client(1)], ['name', 'client_id']);
    expect(table.split('\n')[0].split(/\s{2,}/)).toEqual(['name', 'client_id']);
    expect(table).not.toContain('redirect');
  });

  it('leave out the columns that cannot fit, and say which', () => {
    const records = [{ a_id: 'a'.repeat(40), b_id: 'b'.repeat(40), c_id: 'c'.repeat(40) }];
    const table = toTable(records);
    expect(Math.max(...widths(table))).toBeLessThanOrEqual(100);
    expect(table).toContain('a'.repeat(40));
    expect(table.split('\n').at(-1)).toBe('(1 more column: c_id; --format json shows everything)');
  });

  it('give the room of the columns left out to the columns kept, and fit the line naming them in 100 columns too', () => {
    const record = { a_id: 'a'.repeat(36), b_id: 'b'.repeat(22), when_signed_in: '2026-11-25T21:59:17.388Z', from_address: '203.0.113.7', last_seen_at: '2026-11-26T08:00:00.000Z' };
    const columns = ['a_id', 'b_id', 'when_signed_in', 'from_address', 'last_seen_at', 'a_long_column_name_a', 'a_long_column_name_b', 'a_long_column_name_c'];
    const table = toTable([record], columns);
    expect(Math.max(...widths(table))).toBeLessThanOrEqual(100);
    const lines = table.split('\n');
    expect(lines[0].split(/\s{2,}/)).toEqual(['a_id', 'b_id', 'when_signed_in', 'from_address']);
    // Once the last columns are left out, the others fit whole: nothing is cut short.
    expect(lines[2]).toBe(`${record.a_id}  ${record.b_id}  2026-11-25 21:59:17  203.0.113.7`);
    expect(lines.slice(3).join(' ')).toBe('(4 more columns: last_seen_at, a_long_column_name_a, a_long_column_name_b, a_long_column_name_c; --format json shows everything)');
  });

  it('wrap one record\'s long values onto indented lines, losing nothing', () => {
    const table = toTable(client(1));
    expect(Math.max(...widths(table))).toBeLessThanOrEqual(100);
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/^field +value$/);
    expect(lines).toContain('created_at         2026-11-25 21:59:17');
    const start = lines.findIndex((line) => line.startsWith('redirect_patterns'));
    const continued = lines.slice(start + 1).filter((line) => line.startsWith(' '.repeat(10)));
    expect(continued.length).toBeGreaterThan(1);
    const joined = [lines[start].replace(/^redirect_patterns\s+/, ''), ...continued.map((line) => line.trim())].join(' ');
    for (const redirect of redirects) expect(joined).toContain(redirect);
  });

  it('print (none) for an empty list', () => {
    expect(toTable([])).toBe('(none)');
  });
});
