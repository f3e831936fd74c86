import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { IdentityProvidersService } from '../identity-providers.service.js';

@Command({ name: 'idp:list', description: 'list the registered identity providers (never their client secrets)' })
export class IdpListCommand extends CommandRunner {
  constructor(private readonly providers: IdentityProvidersService) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.providers.list(), ['name', 'mode', 'issuer', 'client_id', 'display_name']);
  }
}

@Command({ name: 'idp:show', arguments: '<name>', description: 'show one identity provider (never its client secret)' })
export class IdpShowCommand extends CommandRunner {
  constructor(private readonly providers: IdentityProvidersService) {
    super();
  }

  async run([name]: string[]): Promise<void> {
    printJson(await this.providers.show(name));
  }
}
