import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { isProcessAlive, isUnreaped } from '../../../src/database/process-alive.js';

describe('isProcessAlive', () => {
  it('calls this process alive, and a pid nobody has gone', () => {
    expect(isProcessAlive(process.pid)).toBe(true);
    expect(isProcessAlive(2 ** 22 + 1)).toBe(false); // above Linux's largest pid
  });

  it.skipIf(process.platform !== 'linux')('calls an exited process its parent has not reaped (a zombie) gone', async () => {
    // The shell becomes `sleep 30`, which never waits for its child: that child stays a zombie.
    const parent = spawn('sh', ['-c', 'sleep 0.1 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const [line] = await once(parent.stdout!, 'data');
      const zombie = Number(String(line).trim());
      await expect.poll(() => isUnreaped(zombie), { timeout: 5_000 }).toBe(true);
      expect(isProcessAlive(zombie)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
