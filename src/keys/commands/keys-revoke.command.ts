import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { KeyAdminService } from '../key-admin.service.js';

@Command({
  name: 'keys:revoke',
  arguments: '<kid>',
  description: 'withdraw a (stolen) key at once: out of the JWKS, its tokens refused everywhere; an active key is replaced',
  // A kid is base64url: one in 64 starts with "-", which must reach the command, not the option parser.
  allowUnknownOptions: true,
})
export class KeysRevokeCommand extends CommandRunner {
  constructor(private readonly keys: KeyAdminService) {
    super();
  }

  async run([kid]: string[]): Promise<void> {
    printJson(await this.keys.revoke(kid));
  }
}
