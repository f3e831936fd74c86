import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import type { Command } from 'commander';
import { CommandFactory, CommandRunnerService } from 'nest-commander';
import { CliModule, COMMAND_GROUPS } from './cli.module.js';
import { CommandDefinitionsModule } from './common/cli/command-definitions.js';
import { takeFormatOption } from './common/cli/output.js';
import { selectCommands } from './common/cli/select-commands.js';
import { createRootLogger, PinoLoggerService } from './common/logging/logger.js';
import { InvalidConfigError, loadProcessEnv } from './config/env.js';
import { openDatabaseServer } from './database/database-server.js';

/**
 * Admin CLI: one JSON document on stdout (or a table with --format table), diagnostics and errors
 * on stderr, exit code 1 on any failure (usage errors included).
 */
function fail(error: unknown): void {
  process.exitCode = 1;
  const { code, exitCode, message } = (error ?? {}) as { code?: string; exitCode?: number; message?: string };
  // commander has already printed its own usage errors; help and --version exit 0.
  if (code?.startsWith('commander.')) {
    process.exitCode = exitCode === 0 ? 0 : 1;
    return;
  }
  process.stderr.write(`error: ${message ?? String(error)}\n`);
}

try {
  // nest-commander parses process.argv itself: --format is taken out first, for every command.
  process.argv = takeFormatOption(process.argv);
  // commander names the program after its script's file (cli.js); usage lines say the bin's name.
  process.argv[1] = 'voyage-connect';
  const logger = createRootLogger({ level: 'warn', destination: 2, pretty: process.stderr.isTTY === true });
  // What a command changed that the security event log records (a user disabled, a key revoked) is written at info.
  const securityLog = logger.child({}, { level: 'info' });
  const options = {
    logger: new PinoLoggerService(logger),
    cliName: 'voyage-connect',
    errorHandler: (error: Error): never => {
      throw error; // let serviceErrorHandler report it after the app closes cleanly
    },
    serviceErrorHandler: fail,
  };
  const selected = await selectCommands(process.argv.slice(2), COMMAND_GROUPS);
  if ('definitions' in selected) {
    // Help and usage errors are answered from the commands' definitions: no database is opened.
    await runCommands(await CommandFactory.createWithoutRunning(CommandDefinitionsModule.of(selected.definitions), options), options.errorHandler);
  } else {
    const env = loadProcessEnv();
    // Which database the command works on, when it is the embedded one (stdout stays one JSON document).
    const database = await openDatabaseServer(env, 'cli', (line) => process.stderr.write(`${line}\n`));
    try {
      await runCommands(await CommandFactory.createWithoutRunning(CliModule.forRoot(env, database.url, securityLog, [selected.module]), options), options.errorHandler);
    } finally {
      await database.close();
    }
  }
} catch (error) {
  fail(error instanceof InvalidConfigError ? new Error(error.message) : error);
}

async function runCommands(app: INestApplicationContext, rethrow: (error: Error) => never): Promise<void> {
  try {
    const runner = app.get(CommandRunnerService);
    // nest-commander overrides exiting on the program only: a command's --help or usage error
    // would process.exit() there, leaving the embedded PostgreSQL this process started running.
    for (const command of (runner as unknown as { commander: Command }).commander.commands) command.exitOverride(rethrow);
    await runner.run();
  } finally {
    await app.close();
  }
}
