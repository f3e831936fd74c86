import { runCommandLine } from './cli-command-line.js';
import { processIo } from './common/cli/command-line-io.js';

/** The admin CLI as a process: its command line, on its own streams and environment, sets its exit code. */
process.exitCode = await runCommandLine(process.argv.slice(2), processIo());
