import { CommandRunner, Option } from 'nest-commander';
import { invalidInput } from '../errors/app-error.js';

/** How a command that acts on one portal user receives the username. */
export interface UsernameOptions {
  username?: string;
  user?: string;
}

/** Marks the forms a username was given in before `--username` was the one form. */
export const DEPRECATED_USERNAME = 'deprecated: use --username';

/**
 * A command that acts on one portal user, named by `--username U`, the one documented form.
 * `--user U` and a positional USERNAME, each once used by some commands, are still accepted so
 * that existing scripts keep working.
 */
export abstract class UsernameCommand extends CommandRunner {
  /** The username, whichever form it came in; exactly one must be given. */
  protected usernameOf(args: string[], options: UsernameOptions): string {
    const username = this.usernameIfGiven(args, options);
    if (username === undefined) throw invalidInput("required option '--username <username>' not specified");
    return username;
  }

  /** The username, whichever form it came in, for a command that may do without one; at most one may be given. */
  protected usernameIfGiven(args: string[], options: UsernameOptions): string | undefined {
    const given = [options.username, options.user, args[0]].filter((value) => value !== undefined);
    if (new Set(given).size > 1) throw invalidInput(`the username is given twice, differently (${given.map((value) => JSON.stringify(value)).join(', ')}): give --username once`);
    return given[0];
  }

  @Option({ flags: '--username <username>', description: 'login name (case-insensitive)' })
  parseUsername(value: string) {
    return value;
  }

  @Option({ flags: '--user <username>', description: DEPRECATED_USERNAME })
  parseUser(value: string) {
    return value;
  }
}
