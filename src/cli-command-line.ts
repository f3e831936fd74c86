import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import type { Command } from 'commander';
import { CommandFactory, CommandRunnerService } from 'nest-commander';
import type { DestinationStream } from 'pino';
import { actingAs, operatorAtThisMachine } from './audit/actor.js';
import { CliModule, COMMAND_GROUPS } from './cli.module.js';
import { CommandDefinitionsModule } from './common/cli/command-definitions.module.js';
import { type CommandLine, type CommandLineIo, runAsCommandLine } from './common/cli/command-line-io.js';
import { takeFormatOption } from './common/cli/output.js';
import { selectCommands } from './common/cli/select-commands.js';
import { createRootLogger, PinoLoggerService } from './common/logging/logger.js';
import { InvalidConfigError, loadEnvWithFile } from './config/env.js';
import { openDatabaseServer } from './database/database-server.js';

/**
 * Admin CLI: one JSON document on stdout (or a table with --format table), diagnostics and errors
 * on stderr, exit code 1 on any failure (usage errors included).
 *
 * One command line (the arguments after the program's name), run to its end: everything it writes
 * or reads goes through `io`, and the Nest application it builds is closed before it resolves to
 * its exit code. cli-run.ts runs it on the process's own streams; the tests run it in their process.
 */
export async function runCommandLine(argv: string[], io: CommandLineIo): Promise<number> {
  const commandLine: CommandLine = { io, format: 'json' };
  let exitCode = 0;
  const fail = (error: unknown): void => {
    exitCode = 1;
    const { code, exitCode: commanderExitCode, message } = (error ?? {}) as { code?: string; exitCode?: number; message?: string };
    // commander has already printed its own usage errors; help and --version exit 0.
    if (code?.startsWith('commander.')) {
      exitCode = commanderExitCode === 0 ? 0 : 1;
      return;
    }
    io.stderr.write(`error: ${message ?? String(error)}\n`);
  };
  // Whatever the command changes, the audit trail records as the operator's who ran it.
  const operator = operatorAtThisMachine(io.env);
  await runAsCommandLine(commandLine, () => actingAs(operator, async () => {
    try {
      // --format is taken out first, for every command, before commander reads the command's own options.
      const { args, format } = takeFormatOption(argv);
      commandLine.format = format;
      await run(args, io, fail);
    } catch (error) {
      fail(error instanceof InvalidConfigError ? new Error(error.message) : error);
    }
  }));
  return exitCode;
}

async function run(args: string[], io: CommandLineIo, fail: (error: unknown) => void): Promise<void> {
  const logger = createRootLogger({ level: 'warn', destination: logDestination(io), pretty: io.stderr.isTTY === true });
  // What a command changed that the security event log records (a user disabled, a key revoked) is written at info.
  const securityLog = logger.child({}, { level: 'info' });
  const options = {
    logger: new PinoLoggerService(logger),
    cliName: 'voyage-connect',
    errorHandler: (error: Error): never => {
      throw error; // let serviceErrorHandler report it after the app closes cleanly
    },
    serviceErrorHandler: fail,
    // commander's usage, help and errors go to this command line's streams, not the process's.
    outputConfiguration: {
      writeOut: (text: string) => void io.stdout.write(text),
      writeErr: (text: string) => void io.stderr.write(text),
      // As commander's own default: a terminal's width, else (undefined, though typed as a number) its 80 columns.
      getOutHelpWidth: () => (io.stdout.isTTY ? io.stdout.columns : undefined) as number,
      getErrHelpWidth: () => (io.stderr.isTTY ? io.stderr.columns : undefined) as number,
    },
  };
  // commander names the program after its script's file (the second argument); usage lines say the bin's name.
  const commanderArgv = [process.execPath, 'voyage-connect', ...args];
  const selected = await selectCommands(args, COMMAND_GROUPS);
  if ('definitions' in selected) {
    // Help and usage errors are answered from the commands' definitions: no database is opened.
    await runCommands(await CommandFactory.createWithoutRunning(CommandDefinitionsModule.of(selected.definitions), options), commanderArgv, options.errorHandler);
    return;
  }
  const env = loadEnvWithFile(io.env, io.cwd);
  // Which database the command works on, when it is the embedded one (stdout stays one JSON document).
  const database = await openDatabaseServer(env, 'cli', (line) => io.stderr.write(`${line}\n`));
  try {
    const app = await CommandFactory.createWithoutRunning(CliModule.forRoot(env, database.url, securityLog, [selected.module]), options);
    await runCommands(app, commanderArgv, options.errorHandler);
  } finally {
    await database.close();
  }
}

/**
 * Log lines go to stderr: the process's own through its file descriptor (lines still gathered
 * are written at exit), another stream (a test's) line by line.
 */
function logDestination(io: CommandLineIo): 2 | DestinationStream {
  const stderr = io.stderr;
  return stderr === process.stderr ? 2 : { write: (line: string) => void stderr.write(line) };
}

async function runCommands(app: INestApplicationContext, argv: string[], rethrow: (error: Error) => never): Promise<void> {
  try {
    const runner = app.get(CommandRunnerService);
    // nest-commander overrides exiting on the program only: a command's --help or usage error
    // would process.exit() there, leaving the embedded PostgreSQL this process started running.
    for (const command of (runner as unknown as { commander: Command }).commander.commands) command.exitOverride(rethrow);
    await runner.run(argv);
  } finally {
    await app.close();
  }
}
