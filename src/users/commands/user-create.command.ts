import { Command } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { readNewSecret } from '../../common/cli/read-new-secret.js';
import { UsernameCommand, type UsernameOptions } from '../../common/cli/username-command.js';
import { UsersService } from '../users.service.js';

@Command({ name: 'user:create', description: 'create a portal user (--username: unique, case-insensitive); the password is read from stdin' })
export class UserCreateCommand extends UsernameCommand {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run(args: string[], options: UsernameOptions): Promise<void> {
    const username = this.usernameOf(args, options);
    const password = await readNewSecret('Password');
    printJson(await this.users.create({ username, password }));
  }
}
