import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TurnBufferedDestination } from '../../../src/common/logging/turn-buffered-destination.js';

const TSX = fileURLToPath(new URL('../../../node_modules/.bin/tsx', import.meta.url));
const MODULE = fileURLToPath(new URL('../../../src/common/logging/turn-buffered-destination.ts', import.meta.url));

describe('TurnBufferedDestination', () => {
  it('writes the lines of one round of the event loop together when the round ends, in order', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'turn-lines-')), 'log');
    const fd = openSync(file, 'w');
    try {
      const destination = new TurnBufferedDestination(fd);
      for (let index = 0; index < 100; index++) destination.write(`{"n":${index}}\n`);
      expect(readFileSync(file, 'utf8')).toBe(''); // gathered, not yet written
      await new Promise((resolve) => setImmediate(resolve));
      await expect.poll(() => readFileSync(file, 'utf8').split('\n').length, { timeout: 2000 }).toBe(101);
      destination.write('{"n":"next round"}\n');
      await expect.poll(() => readFileSync(file, 'utf8').split('\n').at(-2), { timeout: 2000 }).toBe('{"n":"next round"}');
      expect(readFileSync(file, 'utf8').split('\n').slice(0, 100)).toEqual(Array.from({ length: 100 }, (_, index) => `{"n":${index}}`));
    } finally {
      closeSync(fd);
    }
  });

  it('writes the lines still gathered when the process exits before the round ends', () => {
    const script = `
      import { TurnBufferedDestination } from ${JSON.stringify(MODULE)};
      const destination = new TurnBufferedDestination(1);
      destination.write('first\\n');
      destination.write('last words\\n');
      process.exit(3);`;
    let stdout = '';
    try {
      execFileSync(TSX, ['--eval', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      const exited = error as { status: number; stdout: string };
      expect(exited.status).toBe(3);
      stdout = exited.stdout;
    }
    expect(stdout).toBe('first\nlast words\n');
  });
});
