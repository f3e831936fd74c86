import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { readNewSecret } from '../../common/cli/read-new-secret.js';
import { UsersService } from '../users.service.js';

@Command({
  name: 'user:set-password',
  arguments: '<username>',
  description: "set a user's password, read from stdin (typed twice at a terminal); the user's devices are signed out",
})
export class UserSetPasswordCommand extends CommandRunner {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run([username]: string[]): Promise<void> {
    // An unknown user fails before anyone types a password for it.
    await this.users.show(username);
    printJson(await this.users.setPassword(username, await readNewSecret('New password')));
  }
}

@Command({ name: 'user:disable', arguments: '<username>', description: 'refuse the user at every sign-in and sign their devices out, until user:enable' })
export class UserDisableCommand extends CommandRunner {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run([username]: string[]): Promise<void> {
    printJson(await this.users.disable(username));
  }
}

@Command({ name: 'user:enable', arguments: '<username>', description: 'let a disabled user sign in again (their devices sign in anew)' })
export class UserEnableCommand extends CommandRunner {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run([username]: string[]): Promise<void> {
    printJson(await this.users.enable(username));
  }
}
