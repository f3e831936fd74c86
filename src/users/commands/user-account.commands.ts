import { Injectable } from '@nestjs/common';
import { Command } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { readNewSecret } from '../../common/cli/read-new-secret.js';
import { DEPRECATED_USERNAME, UsernameCommand, type UsernameOptions } from '../../common/cli/username-command.js';
import { UsersService } from '../users.service.js';

@Command({
  name: 'user:set-password',
  arguments: '[username]',
  argsDescription: { username: DEPRECATED_USERNAME },
  description: "set a user's password, read from stdin (typed twice at a terminal); the user's devices are signed out",
})
export class UserSetPasswordCommand extends UsernameCommand {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run(args: string[], options: UsernameOptions): Promise<void> {
    const username = this.usernameOf(args, options);
    // An unknown user fails before anyone types a password for it.
    await this.users.show(username);
    printJson(await this.users.setPassword(username, await readNewSecret('New password')));
  }
}

/**
 * user:disable and user:enable: one UsersService call on the named user, its answer printed.
 * Each command is its own class (nest-commander registers a command per class); what they do is written here once.
 */
@Injectable()
abstract class UserStatusCommand extends UsernameCommand {
  constructor(protected readonly users: UsersService) {
    super();
  }

  protected abstract change(username: string): Promise<unknown>;

  async run(args: string[], options: UsernameOptions): Promise<void> {
    printJson(await this.change(this.usernameOf(args, options)));
  }
}

@Command({
  name: 'user:disable',
  arguments: '[username]',
  argsDescription: { username: DEPRECATED_USERNAME },
  description: 'refuse the user at every sign-in and sign their devices out, until user:enable',
})
export class UserDisableCommand extends UserStatusCommand {
  protected change(username: string) {
    return this.users.disable(username);
  }
}

@Command({
  name: 'user:enable',
  arguments: '[username]',
  argsDescription: { username: DEPRECATED_USERNAME },
  description: 'let a disabled user sign in again (their devices sign in anew)',
})
export class UserEnableCommand extends UserStatusCommand {
  protected change(username: string) {
    return this.users.enable(username);
  }
}
