import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { invalidInput } from '../errors/app-error.js';
import { commandLineIo, commandLinePath } from './command-line-io.js';

/** One non-blank line of a JSON-lines file: its number (from 1) and its value, or why it is not JSON. */
export type JsonLine = { line: number; value: unknown; error?: undefined } | { line: number; value?: undefined; error: string };

/** Reads a JSON-lines file (`-`: stdin); blank lines are skipped. Throws invalid_input when it cannot be read. */
export async function readJsonLines(file: string): Promise<JsonLine[]> {
  let content: string;
  try {
    content = file === '-' ? await text(commandLineIo().stdin) : await readFile(commandLinePath(file), 'utf8');
  } catch (error) {
    throw invalidInput(`cannot read ${file}: ${(error as Error).message}`);
  }
  return content.split(/\r?\n/).flatMap((source, index): JsonLine[] => {
    if (source.trim() === '') return [];
    try {
      return [{ line: index + 1, value: JSON.parse(source) }];
    } catch (error) {
      return [{ line: index + 1, error: `not JSON: ${(error as Error).message}` }];
    }
  });
}
