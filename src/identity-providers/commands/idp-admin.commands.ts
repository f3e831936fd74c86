import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { IdentityProvidersService } from '../identity-providers.service.js';
import { UpstreamVaultService } from '../upstream-vault.service.js';
import { readClientSecret } from './read-client-secret.js';

@Command({
  name: 'idp:rotate-secret',
  arguments: '<name>',
  description: "replace a provider's client secret, read from stdin (an empty line: none, a public client)",
})
export class IdpRotateSecretCommand extends CommandRunner {
  constructor(
    private readonly providers: IdentityProvidersService,
    private readonly vault: UpstreamVaultService,
  ) {
    super();
  }

  async run([name]: string[]): Promise<void> {
    // An unknown provider fails before anyone types a secret for it.
    await this.providers.show(name);
    printJson(await this.providers.rotateSecret(name, await readClientSecret(this.vault)));
  }
}

@Command({
  name: 'idp:delete',
  arguments: '<name>',
  description: 'remove a provider that no client signs in with (its brokered users stay)',
})
export class IdpDeleteCommand extends CommandRunner {
  constructor(private readonly providers: IdentityProvidersService) {
    super();
  }

  async run([name]: string[]): Promise<void> {
    printJson(await this.providers.delete(name));
  }
}
