import { Command, CommandRunner, Option } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { readNewSecret } from '../../common/cli/read-new-secret.js';
import { UsersService } from '../users.service.js';

@Command({ name: 'user:create', description: 'create a portal user; the password is read from stdin' })
export class UserCreateCommand extends CommandRunner {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run(_args: string[], options: { username: string }): Promise<void> {
    const password = await readNewSecret('Password');
    printJson(await this.users.create({ username: options.username, password }));
  }

  @Option({ flags: '--username <username>', description: 'login name (unique, case-insensitive)', required: true })
  parseUsername(value: string) {
    return value;
  }
}
