import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { ClientsService } from '../clients.service.js';

@Command({
  name: 'client:rotate-secret',
  arguments: '<id>',
  description: 'issue a new secret (printed once); the previous one works until previous_secret_expires_at',
})
export class ClientRotateSecretCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run([id]: string[]): Promise<void> {
    printJson(await this.clients.rotateSecret(id));
  }
}

@Command({ name: 'client:disable', arguments: '<id>', description: 'refuse the client everywhere until enabled again' })
export class ClientDisableCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run([id]: string[]): Promise<void> {
    printJson(await this.clients.setEnabled(id, false));
  }
}

@Command({ name: 'client:enable', arguments: '<id>', description: 'accept a disabled client again' })
export class ClientEnableCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run([id]: string[]): Promise<void> {
    printJson(await this.clients.setEnabled(id, true));
  }
}

@Command({
  name: 'client:delete',
  arguments: '<id>',
  description: 'delete a client for good: its grants revoked, its streams closed everywhere, its id and secret unknown from now on',
})
export class ClientDeleteCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run([id]: string[]): Promise<void> {
    printJson(await this.clients.delete(id));
  }
}
