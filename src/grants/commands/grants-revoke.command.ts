import { Command, Option } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { UsernameCommand, type UsernameOptions } from '../../common/cli/username-command.js';
import { ClientsService } from '../../clients/clients.service.js';
import { UsersService } from '../../users/users.service.js';
import { SignOutsRepository } from '../sign-outs.repository.js';

@Command({
  name: 'grants:revoke',
  description: "sign a user's devices out: revoke their grants (on one client with --client); their tokens are refused and streams closed at once",
})
export class GrantsRevokeCommand extends UsernameCommand {
  constructor(
    private readonly users: UsersService,
    private readonly clients: ClientsService,
    private readonly signOuts: SignOutsRepository,
  ) {
    super();
  }

  async run(args: string[], options: UsernameOptions & { client?: string }): Promise<void> {
    const user = await this.users.show(this.usernameOf(args, options));
    const client = options.client === undefined ? null : await this.clients.show(options.client);
    const revoked = await this.signOuts.signOutNow({ userId: user.id, ...(client ? { clientId: client.client_id } : {}) });
    printJson({ user_id: user.id, username: user.username, client_id: client?.client_id ?? null, revoked_grants: revoked });
  }

  @Option({ flags: '--client <id>', description: "only this client's grants" })
  parseClient(value: string) {
    return value;
  }
}
