import { expect } from 'vitest';
import type { CliResult } from './processes.js';

/** The security event lines a command wrote on stderr (JSON, as stderr is no terminal here). */
export function securityEvents(result: CliResult): Record<string, unknown>[] {
  return result.stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => typeof line.event === 'string');
}

/** A successful run: exit 0, the whole of stdout one JSON document, nothing JSON-like on stderr but security events. */
export function parseSuccess<T = Record<string, unknown>>(result: CliResult): T {
  expect(result, result.stderr).toMatchObject({ code: 0, signal: null });
  const lines = result.stderr.split('\n').filter((text) => text.trim() !== '');
  expect(lines.filter((line) => line.startsWith('{')).length, result.stderr).toBe(securityEvents(result).length);
  for (const line of lines.filter((text) => !text.startsWith('{'))) expect(() => JSON.parse(line), `stderr line is JSON: ${line}`).toThrow();
  return JSON.parse(result.stdout) as T;
}

/** A failed run: exit 1, nothing on stdout, one line on stderr starting with "error:". */
export function expectFailure(result: CliResult, message?: RegExp): void {
  expect(result, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toMatchObject({ code: 1, signal: null, stdout: '' });
  expect(result.stderr).toMatch(/^error: [^\n]+\n$/);
  if (message) expect(result.stderr).toMatch(message);
}
