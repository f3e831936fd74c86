import { Command, CommandRunner, Option } from 'nest-commander';
import { readJsonLines } from '../../common/cli/json-lines.js';
import { optionsFromRecord } from '../../common/cli/options-from-record.js';
import { printJson } from '../../common/cli/output.js';
import { AppError, conflict, invalidInput } from '../../common/errors/app-error.js';
import { LOCAL_SIGN_IN } from '../../identity-providers/identity-provider.entity.js';
import { CLIENT_HEARTBEAT_SECONDS, DEVICE_CODE_GRANT, ID_TOKEN_ALGS } from '../client.entity.js';
import { ClientsService, DEFAULT_GRANTS, type NewClientInput } from '../clients.service.js';
import type { CreateClientDto } from '../dto/create-client.dto.js';
import { type ClientOptions, SharedClientOptions } from './client-options.js';
import { heartbeatSetting } from './heartbeat-option.js';
import { scopeDescriptionsOption } from './scope-description-option.js';

interface Options extends ClientOptions {
  file?: string;
}

@SharedClientOptions({
  name: 'unique display name (required without --file)',
  grant: `grant type, repeatable (default: ${DEFAULT_GRANTS.join(' ')}; device_code stands for ${DEVICE_CODE_GRANT})`,
  redirect: 'allowed redirect URL or private-range pattern, repeatable',
  scope: 'allowed scope, repeatable',
  scopeDescription: 'what the approval page shows for a scope of --scope instead of its name, repeatable (at most 200 characters)',
  signIn: `how its users sign in, repeatable: ${LOCAL_SIGN_IN} (portal users with a password) or an identity provider's name (default: ${LOCAL_SIGN_IN})`,
  public: 'a public client (an app on a phone or in a browser): no secret, it names itself with client_id and must use PKCE',
  postLogoutRedirect: 'where logout may send the browser back to: an exact https URL (http only on loopback), repeatable',
  idTokenAlg: `what its ID tokens are signed with: ${ID_TOKEN_ALGS.join(' or ')} (default: RS256)`,
  heartbeat: `seconds between pings on its notification streams (${CLIENT_HEARTBEAT_SECONDS.min} to ${CLIENT_HEARTBEAT_SECONDS.max}), for links where each ping costs (default: the instance's WS_HEARTBEAT_INTERVAL)`,
})
@Command({
  name: 'client:create',
  description: 'register a client, or with --file one per JSON line, and print its secret (shown only this once; a --public client has none)',
})
export class ClientCreateCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run(_args: string[], options: Options): Promise<void> {
    if (options.file === undefined) {
      if (options.name === undefined) throw invalidInput("required option '--name <name>' not specified");
      printJson(await this.clients.create(toInput(options)));
      return;
    }
    if (Object.keys(options).length > 1) throw invalidInput('--file takes every setting from the file: give no other option with it');
    printJson(await this.createFromFile(options.file), ['client_id', 'client_secret', 'name']);
  }

  /**
   * Every line checked first, as if its fields were given as options, and each bad one reported;
   * only when all are good are they all created, in one transaction.
   */
  private async createFromFile(file: string) {
    const lines = await readJsonLines(file);
    if (lines.length === 0) throw invalidInput(`${file === '-' ? 'stdin' : file} holds no client`);
    const refused: string[] = [];
    const checked: CreateClientDto[] = [];
    const lineOfName = new Map<string, number>();
    for (const { line, value, error } of lines) {
      try {
        if (error) throw invalidInput(error);
        const dto = await this.clients.checkNew(toInput(optionsFromRecord(this, value, ['file']) as Options));
        const twin = lineOfName.get(dto.name.toLowerCase());
        if (twin !== undefined) throw invalidInput(`the name "${dto.name}" is also on line ${twin}`);
        lineOfName.set(dto.name.toLowerCase(), line);
        checked.push(dto);
      } catch (failure) {
        refused.push(`line ${line}: ${(failure as Error).message}`);
      }
    }
    if (refused.length > 0) throw invalidInput(`${refused.length} of ${lines.length} lines refused; no client was created:\n  ${refused.join('\n  ')}`);
    try {
      return await this.clients.createAll(checked);
    } catch (failure) {
      // A name taken meanwhile, or before: say on which line.
      if (!(failure instanceof AppError && failure.code === 'conflict')) throw failure;
      const line = checked.find((dto) => failure.message.includes(`"${dto.name}"`));
      throw conflict(`${line ? `line ${lineOfName.get(line.name.toLowerCase())}: ` : ''}${failure.message}; no client was created`);
    }
  }

  @Option({
    flags: '--file <path>',
    description: 'many clients, one JSON object per line with the options as fields ({"name": "…", "grant": ["…"]}); - reads stdin',
  })
  parseFile(value: string) {
    return value;
  }
}

/** The options, from the command line or a file's line, as create takes them. */
const toInput = (options: Options): NewClientInput => ({
  name: options.name,
  grants: options.grant as never,
  redirectPatterns: options.redirect,
  scopes: options.scope,
  scopeDescriptions: scopeDescriptionsOption(options.scopeDescription),
  signIn: options.signIn,
  tokenEndpointAuthMethod: options.public ? 'none' : undefined,
  postLogoutRedirectUris: options.postLogoutRedirect,
  idTokenSignedResponseAlg: options.idTokenAlg as never,
  heartbeatInterval: heartbeatSetting(options.heartbeat) as never,
});
