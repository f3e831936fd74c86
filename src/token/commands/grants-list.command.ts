import { Command } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { UsernameCommand, type UsernameOptions } from '../../common/cli/username-command.js';
import { UsersService } from '../../users/users.service.js';
import { GrantsRepository } from '../../grants/grants.repository.js';

@Command({
  name: 'grants:list',
  description: "list a user's signed-in devices (live grants), oldest first: client, scope, when signed in, last refreshed, and when it lapses unused",
})
export class GrantsListCommand extends UsernameCommand {
  constructor(
    private readonly users: UsersService,
    private readonly grants: GrantsRepository,
  ) {
    super();
  }

  async run(args: string[], options: UsernameOptions): Promise<void> {
    const user = await this.users.show(this.usernameOf(args, options));
    printJson(await this.grants.liveOfUser(user.id), ['client_id', 'client_name', 'scope', 'last_refreshed_at', 'expires_at']);
  }
}
