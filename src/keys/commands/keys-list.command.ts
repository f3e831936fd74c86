import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { KeyAdminService } from '../key-admin.service.js';

@Command({ name: 'keys:list', description: 'list signing keys, newest first: kid, alg, status and dates (never private material)' })
export class KeysListCommand extends CommandRunner {
  constructor(private readonly keys: KeyAdminService) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.keys.list(), ['kid', 'alg', 'status', 'expires_at']);
  }
}
