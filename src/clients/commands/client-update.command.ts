import { Command, CommandRunner, Option } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { invalidInput } from '../../common/errors/app-error.js';
import { LOCAL_SIGN_IN } from '../../identity-providers/identity-provider.entity.js';
import { CLIENT_HEARTBEAT_SECONDS, DEVICE_CODE_GRANT, ID_TOKEN_ALGS } from '../client.entity.js';
import { ClientsService, PUBLIC_IS_FIXED } from '../clients.service.js';
import { type ClientOptions, SharedClientOptions } from './client-options.js';
import { heartbeatSetting } from './heartbeat-option.js';
import { scopeDescriptionsOption } from './scope-description-option.js';

interface Options extends ClientOptions {
  clearRedirects?: boolean;
  clearScopes?: boolean;
  clearPostLogoutRedirects?: boolean;
}

@SharedClientOptions({
  name: 'new unique display name',
  grant: `grant type, repeatable; replaces the grants (device_code stands for ${DEVICE_CODE_GRANT})`,
  redirect: 'allowed redirect URL or private-range pattern, repeatable; replaces the patterns',
  scope: 'allowed scope, repeatable; replaces the scopes',
  scopeDescription: 'what the approval page shows for a scope instead of its name, repeatable; other scopes keep theirs; SCOPE= (empty) removes it',
  signIn: `how its users sign in, repeatable: ${LOCAL_SIGN_IN} or an identity provider's name; replaces the methods`,
  public: 'refused: whether a client is public is fixed when it is created (register a new client instead)',
  postLogoutRedirect: 'where logout may send the browser back to: an exact https URL (http only on loopback), repeatable; replaces the URLs',
  idTokenAlg: `what its ID tokens are signed with: ${ID_TOKEN_ALGS.join(' or ')}`,
  heartbeat: `seconds between pings on its notification streams (${CLIENT_HEARTBEAT_SECONDS.min} to ${CLIENT_HEARTBEAT_SECONDS.max}), or default for the instance's WS_HEARTBEAT_INTERVAL; open streams follow within a second`,
})
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
    // The CLI changes no client's authentication: a registration (RFC 7592) may switch between the two secret methods, no more.
    if (options.public) throw invalidInput(PUBLIC_IS_FIXED);
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
      }),
    );
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
