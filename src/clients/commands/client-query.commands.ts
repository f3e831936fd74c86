import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { ClientsService } from '../clients.service.js';

@Command({ name: 'client:list', description: 'list registered clients (never their secrets)' })
export class ClientListCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.clients.list(), ['client_id', 'name', 'enabled', 'grants', 'scopes', 'redirect_patterns', 'sign_in_methods']);
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
