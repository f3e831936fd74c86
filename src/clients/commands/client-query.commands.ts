import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { LOCAL_SIGN_IN } from '../../identity-providers/identity-provider.entity.js';
import { ClientsService } from '../clients.service.js';

const LIST_COLUMNS = ['client_id', 'name', 'enabled', 'grants', 'scopes', 'redirect_patterns'];

@Command({ name: 'client:list', description: 'list registered clients (never their secrets)' })
export class ClientListCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run(): Promise<void> {
    const clients = await this.clients.list();
    // Only when some client signs in through a provider: a column of "local" on every row would say nothing, and cut the names short.
    const throughProviders = clients.some((client) => client.sign_in_methods.some((method) => method !== LOCAL_SIGN_IN));
    // Likewise, which clients are public only once one is.
    const somePublic = clients.some((client) => client.token_endpoint_auth_method === 'none');
    // And heartbeats once a client has its own.
    const ownHeartbeat = clients.some((client) => client.heartbeat_interval !== null);
    printJson(clients, [
      ...LIST_COLUMNS,
      ...(throughProviders ? ['sign_in_methods'] : []),
      ...(somePublic ? ['token_endpoint_auth_method'] : []),
      ...(ownHeartbeat ? ['heartbeat_interval'] : []),
    ]);
  }
}

@Command({ name: 'client:show', arguments: '<id>', description: 'show one client (never its secret)' })
export class ClientShowCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run([id]: string[]): Promise<void> {
    printJson(await this.clients.show(id));
  }
}
