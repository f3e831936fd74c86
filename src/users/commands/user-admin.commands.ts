import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { UsernameCommand, type UsernameOptions } from '../../common/cli/username-command.js';
import { LoginThrottleService } from '../login-throttle.service.js';
import { UsersService } from '../users.service.js';

@Command({ name: 'user:list', description: 'list portal users, oldest first (never passwords)' })
export class UserListCommand extends CommandRunner {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.users.list());
  }
}

@Command({ name: 'user:unlock', description: "clear a user's failed-login slow-down, from every address" })
export class UserUnlockCommand extends UsernameCommand {
  constructor(
    private readonly users: UsersService,
    private readonly throttle: LoginThrottleService,
  ) {
    super();
  }

  async run(args: string[], options: UsernameOptions): Promise<void> {
    const user = await this.users.show(this.usernameOf(args, options));
    printJson({ ...user, cleared_slow_downs: await this.throttle.clearUser(user.username) });
  }
}
