import { type ChildProcessWithoutNullStreams, execFile, spawn, type SpawnOptionsWithoutStdio } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * An example runs as one process: Node with tsx's loader (`node --import tsx`), from the
 * repository's root, where `tsx` resolves. The `tsx` command would run the example in a child of
 * its own, which a kill of the command leaves running (a subscriber then reconnects forever).
 */
const exampleArgs = (example: string, args: string[]) => ['--import', 'tsx', example, ...args];

/** Starts an example with `args` (the test ends it: killing the returned process ends the example). */
export function spawnExample(example: string, args: string[], options: SpawnOptionsWithoutStdio = {}): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, exampleArgs(example, args), { cwd: ROOT, ...options });
}

/** Runs an example to its end with `args`, as a person at a shell would (stdout and stderr piped). */
export function runToEnd(example: string, args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(process.execPath, exampleArgs(example, args), { cwd: ROOT, env: { PATH: process.env.PATH, ...env } }, (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }));
  });
}

/** How many processes run `example` with `marker` among their arguments (Linux's /proc; elsewhere 0). */
export function examplesRunning(example: string, marker: string): number {
  if (process.platform !== 'linux') return 0;
  let count = 0;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // ended meanwhile
    }
    if (args.includes(example) && args.includes(marker)) count++;
  }
  return count;
}
