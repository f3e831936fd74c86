import { Command, Option } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { UsernameCommand, type UsernameOptions } from '../../common/cli/username-command.js';
import { invalidInput } from '../../common/errors/app-error.js';
import { ClientsService } from '../../clients/clients.service.js';
import { UsersService } from '../../users/users.service.js';
import { GrantsService } from '../../grants/grants.service.js';
import { SignOutsRepository } from '../../grants/sign-outs.repository.js';

type RevokeOptions = UsernameOptions & { client?: string; grant?: string };

@Command({
  name: 'grants:revoke',
  description:
    "sign a user's devices out: revoke their grants (on one client with --client), or one grant with --grant (a grant id of grants:list); their tokens are refused and streams closed at once",
})
export class GrantsRevokeCommand extends UsernameCommand {
  constructor(
    private readonly users: UsersService,
    private readonly clients: ClientsService,
    private readonly signOuts: SignOutsRepository,
    private readonly grants: GrantsService,
  ) {
    super();
  }

  async run(args: string[], options: RevokeOptions): Promise<void> {
    if (options.grant !== undefined) return this.revokeOne(options.grant, args, options);
    const user = await this.users.show(this.usernameOf(args, options));
    const client = options.client === undefined ? null : await this.clients.show(options.client);
    const revoked = await this.signOuts.signOutNow({ userId: user.id, ...(client ? { clientId: client.client_id } : {}) });
    printJson({ user_id: user.id, username: user.username, client_id: client?.client_id ?? null, revoked_grants: revoked });
  }

  /** One device: the grant alone, or with a username the grant of that user only. */
  private async revokeOne(grantId: string, args: string[], options: RevokeOptions): Promise<void> {
    if (options.client !== undefined) throw invalidInput('give --grant or --client, not both: a grant is of one client already');
    const username = this.usernameIfGiven(args, options);
    const owner = username === undefined ? undefined : await this.users.show(username);
    printJson(await this.grants.revokeOneNow(grantId, owner));
  }

  @Option({ flags: '--client <id>', description: "only this client's grants" })
  parseClient(value: string) {
    return value;
  }

  @Option({ flags: '--grant <id>', description: 'only this grant (its grant_id in grants:list); with --username, it must be that user\'s' })
  parseGrant(value: string) {
    return value;
  }
}
