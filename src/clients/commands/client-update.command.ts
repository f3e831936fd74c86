import { Command, CommandRunner, Option } from 'nest-commander';
import { collect, printJson } from '../../common/cli/output.js';
import { invalidInput } from '../../common/errors/app-error.js';
import { LOCAL_SIGN_IN } from '../../identity-providers/identity-provider.entity.js';
import { CLIENT_HEARTBEAT_SECONDS, DEVICE_CODE_GRANT, ID_TOKEN_ALGS, resolveGrantAlias } from '../client.entity.js';
import { ClientsService } from '../clients.service.js';
import { HEARTBEAT_FLAGS, heartbeatSetting, parseHeartbeat } from './heartbeat-option.js';
import { SCOPE_DESCRIPTION_FLAGS, scopeDescriptionsOption } from './scope-description-option.js';

interface Options {
  name?: string;
  grant?: string[];
  redirect?: string[];
  scope?: string[];
  scopeDescription?: string[];
  signIn?: string[];
  postLogoutRedirect?: string[];
  idTokenAlg?: string;
  heartbeat?: number | string;
  public?: boolean;
  clearRedirects?: boolean;
  clearScopes?: boolean;
  clearPostLogoutRedirects?: boolean;
}

@Command({
  name: 'client:update',
  arguments: '<id>',
  description: 'change a client: a list given (--grant, --redirect, --scope, --sign-in, --post-logout-redirect) replaces the stored one; what is taken away is refused at once',
})
export class ClientUpdateCommand extends CommandRunner {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run([id]: string[], options: Options): Promise<void> {
    printJson(
      await this.clients.update(id, {
        name: options.name,
        grants: options.grant,
        redirectPatterns: listOrCleared(options.redirect, options.clearRedirects, 'redirect'),
        scopes: listOrCleared(options.scope, options.clearScopes, 'scope'),
        scopeDescriptions: scopeDescriptionsOption(options.scopeDescription, true),
        signIn: options.signIn,
        postLogoutRedirectUris: listOrCleared(options.postLogoutRedirect, options.clearPostLogoutRedirects, 'post-logout-redirect'),
        idTokenSignedResponseAlg: options.idTokenAlg,
        heartbeatInterval: heartbeatSetting(options.heartbeat),
        tokenEndpointAuthMethod: options.public ? 'none' : undefined,
      }),
    );
  }

  @Option({ flags: '--name <name>', description: 'new unique display name' })
  parseName(value: string) {
    return value;
  }

  @Option({ flags: '--grant <grant>', description: `grant type, repeatable; replaces the grants (device_code stands for ${DEVICE_CODE_GRANT})` })
  parseGrant(value: string, previous?: string[]) {
    return collect(resolveGrantAlias(value), previous);
  }

  @Option({ flags: '--redirect <pattern>', description: 'allowed redirect URL or private-range pattern, repeatable; replaces the patterns' })
  parseRedirect(value: string, previous?: string[]) {
    return collect(value, previous);
  }

  @Option({ flags: '--scope <scope>', description: 'allowed scope, repeatable; replaces the scopes' })
  parseScope(value: string, previous?: string[]) {
    return collect(value, previous);
  }

  @Option({
    flags: SCOPE_DESCRIPTION_FLAGS,
    description: 'what the approval page shows for a scope instead of its name, repeatable; other scopes keep theirs; SCOPE= (empty) removes it',
  })
  parseScopeDescription(value: string, previous?: string[]) {
    return collect(value, previous);
  }

  @Option({ flags: '--sign-in <method>', description: `how its users sign in, repeatable: ${LOCAL_SIGN_IN} or an identity provider's name; replaces the methods` })
  parseSignIn(value: string, previous?: string[]) {
    return collect(value, previous);
  }

  @Option({ flags: '--post-logout-redirect <url>', description: 'where logout may send the browser back to: an exact https URL (http only on loopback), repeatable; replaces the URLs' })
  parsePostLogoutRedirect(value: string, previous?: string[]) {
    return collect(value, previous);
  }

  @Option({ flags: '--id-token-alg <alg>', description: `what its ID tokens are signed with: ${ID_TOKEN_ALGS.join(' or ')}` })
  parseIdTokenAlg(value: string) {
    return value;
  }

  @Option({
    flags: HEARTBEAT_FLAGS,
    description: `seconds between pings on its notification streams (${CLIENT_HEARTBEAT_SECONDS.min} to ${CLIENT_HEARTBEAT_SECONDS.max}), or default for the instance's WS_HEARTBEAT_INTERVAL; open streams follow within a second`,
  })
  parseHeartbeat(value: string) {
    return parseHeartbeat(value);
  }

  @Option({ flags: '--public', description: 'refused: whether a client is public is fixed when it is created (register a new client instead)' })
  parsePublic() {
    return true;
  }

  @Option({ flags: '--clear-redirects', description: 'remove every redirect pattern' })
  parseClearRedirects() {
    return true;
  }

  @Option({ flags: '--clear-scopes', description: 'remove every scope' })
  parseClearScopes() {
    return true;
  }

  @Option({ flags: '--clear-post-logout-redirects', description: 'remove every post-logout redirect URL' })
  parseClearPostLogoutRedirects() {
    return true;
  }
}

/** The new list: the values given, an empty one when cleared, or undefined (unchanged). */
function listOrCleared(values: string[] | undefined, cleared: boolean | undefined, flag: string): string[] | undefined {
  if (cleared && values) throw invalidInput(`--${flag} and --clear-${flag}s contradict each other`);
  return cleared ? [] : values;
}
