import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));

/** Runs an example to its end with `args`, as a person at a shell would (stdout and stderr piped). */
export function runToEnd(example: string, args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(TSX, [example, ...args], { env: { PATH: process.env.PATH, ...env } }, (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }));
  });
}
