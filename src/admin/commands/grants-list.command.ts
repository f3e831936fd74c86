import { Command } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { UsernameCommand, type UsernameOptions } from '../../common/cli/username-command.js';
import { UsersService } from '../../users/users.service.js';
import { GrantsService } from '../../grants/grants.service.js';

/**
 * The table's columns, in the order they give way at 100 columns (table.ts): the ids a later
 * command takes first, always whole, then what tells two devices apart, then the rest, cut short
 * or left out (and named on the table's last line).
 */
const TABLE_COLUMNS = ['grant_id', 'client_id', 'created_at', 'created_address', 'last_refreshed_at', 'last_refreshed_address', 'client_name', 'scope', 'expires_at'];

@Command({
  name: 'grants:list',
  description:
    "list a user's signed-in devices (live grants), oldest first: grant id, client, scope, when and from which address signed in and last refreshed, and when it lapses unused",
})
export class GrantsListCommand extends UsernameCommand {
  constructor(
    private readonly users: UsersService,
    private readonly grants: GrantsService,
  ) {
    super();
  }

  async run(args: string[], options: UsernameOptions): Promise<void> {
    const user = await this.users.show(this.usernameOf(args, options));
    printJson(await this.grants.liveOfUser(user.id), TABLE_COLUMNS);
  }
}
