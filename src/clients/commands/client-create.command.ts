import { Command, CommandRunner, Option } from 'nest-commander';
import { collect, printJson } from '../../common/cli/output.js';
import { DEVICE_CODE_GRANT, resolveGrantAlias } from '../client.entity.js';
import { ClientsService, DEFAULT_GRANTS } from '../clients.service.js';
import { SCOPE_DESCRIPTION_FLAGS, scopeDescriptionsOption } from './scope-description-option.js';

interface Options {
  name: string;
  grant?: string[];
  redirect?: string[];
  scope?: string[];
  scopeDescription?: string[];
}

@Command({ name: 'client:create', description: 'register a client and print its secret (shown only this once)' })
export class ClientCreateCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run(_args: string[], options: Options): Promise<void> {
    printJson(
      await this.clients.create({
        name: options.name,
        grants: options.grant as never,
        redirectPatterns: options.redirect,
        scopes: options.scope,
        scopeDescriptions: scopeDescriptionsOption(options.scopeDescription),
      }),
    );
  }

  @Option({ flags: '--name <name>', description: 'unique display name', required: true })
  parseName(value: string) {
    return value;
  }

  @Option({ flags: '--grant <grant>', description: `grant type, repeatable (default: ${DEFAULT_GRANTS.join(' ')}; device_code stands for ${DEVICE_CODE_GRANT})` })
  parseGrant(value: string, previous?: string[]) {
    return collect(resolveGrantAlias(value), previous);
  }

  @Option({ flags: '--redirect <pattern>', description: 'allowed redirect URL or private-range pattern, repeatable' })
  parseRedirect(value: string, previous?: string[]) {
    return collect(value, previous);
  }

  @Option({ flags: '--scope <scope>', description: 'allowed scope, repeatable' })
  parseScope(value: string, previous?: string[]) {
    return collect(value, previous);
  }

  @Option({ flags: SCOPE_DESCRIPTION_FLAGS, description: 'what the approval page shows for a scope of --scope instead of its name, repeatable (at most 200 characters)' })
  parseScopeDescription(value: string, previous?: string[]) {
    return collect(value, previous);
  }
}
