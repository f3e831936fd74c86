import { Command, CommandRunner, Option } from 'nest-commander';
import { collect, printJson } from '../../common/cli/output.js';
import { DEFAULT_IDP_SCOPES } from '../dto/identity-provider-input.dto.js';
import { IDP_MODES } from '../identity-provider.entity.js';
import { IdentityProvidersService } from '../identity-providers.service.js';
import { UpstreamVaultService } from '../upstream-vault.service.js';
import { readClientSecret } from './read-client-secret.js';

interface Options {
  name?: string;
  issuer?: string;
  clientId?: string;
  displayName?: string;
  scope?: string[];
  mode?: string;
  trustEmail?: boolean;
}

@Command({
  name: 'idp:create',
  description: "register the portal's OpenID Connect provider once its discovery document checks out; its client secret is read from stdin (an empty line: a public client)",
})
export class IdpCreateCommand extends CommandRunner {
  constructor(
    private readonly providers: IdentityProvidersService,
    private readonly vault: UpstreamVaultService,
  ) {
    super();
  }

  async run(_args: string[], options: Options): Promise<void> {
    // Commander has checked the required options: a missing one fails before the secret is asked for.
    const secret = await readClientSecret(this.vault);
    printJson(
      await this.providers.create(
        { name: options.name, issuer: options.issuer, clientId: options.clientId, displayName: options.displayName, scopes: options.scope, mode: options.mode, trustEmail: options.trustEmail },
        secret,
      ),
    );
  }

  @Option({ flags: '--name <name>', required: true, description: 'its name in commands, --sign-in and the callback path: lowercase letters, digits, - and _ (at most 63; not "local")' })
  parseName(value: string) {
    return value;
  }

  @Option({ flags: '--issuer <url>', required: true, description: 'its issuer, exactly as its discovery document spells it (https; http only on a loopback address)' })
  parseIssuer(value: string) {
    return value;
  }

  @Option({ flags: '--client-id <id>', required: true, description: "the service's client id at the provider" })
  parseClientId(value: string) {
    return value;
  }

  @Option({ flags: '--display-name <text>', description: 'the text of its button on the sign-in pages (default: the name)' })
  parseDisplayName(value: string) {
    return value;
  }

  @Option({ flags: '--scope <scope>', description: `scope asked of the provider, repeatable (default: ${DEFAULT_IDP_SCOPES.join(' ')})` })
  parseScope(value: string, previous?: string[]) {
    return collect(value, previous);
  }

  @Option({ flags: '--mode <mode>', description: `${IDP_MODES.join(' or ')} (default: broker): whose tokens the devices get, the service's or the provider's` })
  parseMode(value: string) {
    return value;
  }

  @Option({ flags: '--trust-email', description: "pass on the provider's email_verified in the service's ID tokens and userinfo (default: off, they say false)" })
  parseTrustEmail() {
    return true;
  }
}
