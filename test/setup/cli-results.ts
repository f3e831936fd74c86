import { expect } from 'vitest';
import type { CliResult } from './processes.js';

/** A successful run: exit 0, the whole of stdout one JSON document, nothing JSON-like on stderr. */
export function parseSuccess<T = Record<string, unknown>>(result: CliResult): T {
  expect(result, result.stderr).toMatchObject({ code: 0, signal: null });
  for (const line of result.stderr.split('\n').filter((text) => text.trim() !== '')) expect(() => JSON.parse(line), `stderr line is JSON: ${line}`).toThrow();
  return JSON.parse(result.stdout) as T;
}

/** A failed run: exit 1, nothing on stdout, one line on stderr starting with "error:". */
export function expectFailure(result: CliResult, message?: RegExp): void {
  expect(result, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toMatchObject({ code: 1, signal: null, stdout: '' });
  expect(result.stderr).toMatch(/^error: [^\n]+\n$/);
  if (message) expect(result.stderr).toMatch(message);
}
