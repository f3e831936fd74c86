import { readFileSync } from 'node:fs';

/**
 * Whether process `pid` still runs. One that exited but is not reaped yet (a zombie: its parent,
 * often init for a detached server, has not waited for it) counts as gone; `kill(pid, 0)` alone
 * would call it alive.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isUnreaped(pid);
}

/** Whether `pid` exited but its parent has not reaped it yet (Linux; false elsewhere). */
export function isUnreaped(pid: number): boolean {
  return processState(pid) === 'Z';
}

/** The state letter of /proc/<pid>/stat (Linux); undefined elsewhere. The name before it may hold spaces and parentheses. */
function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2];
  } catch {
    return undefined;
  }
}
