import { AsyncLocalStorage } from 'node:async_hooks';
import { resolve } from 'node:path';

/**
 * What one command line reads and writes. A command never touches `process.stdout`, `stderr`,
 * `stdin`, `env` or the working directory: it asks `commandLineIo()`, which is the process's own for
 * the CLI and a test's buffers when the tests run a command line inside their own process.
 */
export interface CommandLineIo {
  stdout: CommandLineOutput;
  stderr: CommandLineOutput;
  stdin: CommandLineInput;
  env: Record<string, string | undefined>;
  /** The working directory relative paths are read from; absent: the process's own. */
  cwd?: string;
}

export interface CommandLineOutput {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** A readable stream; a terminal's can also turn echo off (setRawMode). */
export type CommandLineInput = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(raw: boolean): unknown };

/** How results are printed: JSON for scripts (the default), a table for people. */
export type OutputFormat = 'json' | 'table';

/** One command line being run: its streams and how it prints results. */
export interface CommandLine {
  io: CommandLineIo;
  format: OutputFormat;
}

const running = new AsyncLocalStorage<CommandLine>();

/** The process's own streams, environment and working directory. */
export function processIo(): CommandLineIo {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env };
}

/** Runs `body` as `commandLine`: what it calls, however deep and however asynchronous, sees that command line. */
export function runAsCommandLine<T>(commandLine: CommandLine, body: () => T): T {
  return running.run(commandLine, body);
}

/** The command line being run (outside one: the process's own streams, JSON results). */
export function currentCommandLine(): CommandLine {
  return running.getStore() ?? { io: processIo(), format: 'json' };
}

export const commandLineIo = (): CommandLineIo => currentCommandLine().io;

/** A path given on the command line, as its working directory reads it (unchanged when that is the process's own). */
export function commandLinePath(path: string): string {
  const { cwd } = commandLineIo();
  return cwd === undefined ? path : resolve(cwd, path);
}
