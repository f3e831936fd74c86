import { Command, CommandRunner, Option } from 'nest-commander';
import { collect, printJson } from '../../common/cli/output.js';
import { invalidInput } from '../../common/errors/app-error.js';
import { IDP_MODES } from '../identity-provider.entity.js';
import { IdentityProvidersService } from '../identity-providers.service.js';

interface Options {
  displayName?: string;
  clientId?: string;
  scope?: string[];
  mode?: string;
  trustEmail?: boolean;
}

@Command({
  name: 'idp:update',
  arguments: '<name>',
  description: 'change a provider: what is given (--scope replaces the list); the issuer cannot change, since users are linked by it',
})
export class IdpUpdateCommand extends CommandRunner {
  constructor(private readonly providers: IdentityProvidersService) {
    super();
  }

  async run([name]: string[], options: Options): Promise<void> {
    if (Object.values(options).every((value) => value === undefined)) throw invalidInput('nothing to change: give --display-name, --client-id, --scope, --mode, --trust-email or --no-trust-email');
    const { displayName, clientId, scope: scopes, mode, trustEmail } = options;
    printJson(await this.providers.update(name, { displayName, clientId, scopes, mode, trustEmail }));
  }

  @Option({ flags: '--display-name <text>', description: 'the text of its button on the sign-in pages' })
  parseDisplayName(value: string) {
    return value;
  }

  @Option({ flags: '--client-id <id>', description: "the service's client id at the provider" })
  parseClientId(value: string) {
    return value;
  }

  @Option({ flags: '--scope <scope>', description: 'scope asked of the provider, repeatable; replaces the scopes' })
  parseScope(value: string, previous?: string[]) {
    return collect(value, previous);
  }

  @Option({ flags: '--mode <mode>', description: `${IDP_MODES.join(' or ')}: applies to sign-ins that start afterwards` })
  parseMode(value: string) {
    return value;
  }

  @Option({ flags: '--trust-email', description: "pass on the provider's email_verified in the service's ID tokens and userinfo, from now on" })
  parseTrustEmail() {
    return true;
  }

  // Commander gives a switch's parser no value, and sets trustEmail to what it returns; with both defined, neither given leaves it unset.
  @Option({ flags: '--no-trust-email', description: 'stop passing it on: they say email_verified false, from now on' })
  parseNoTrustEmail() {
    return false;
  }
}
