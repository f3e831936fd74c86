import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { KeyAdminService } from '../key-admin.service.js';

@Command({
  name: 'keys:rotate',
  description: "sign with a new key of the active key's algorithm; the old one stays in the JWKS until its tokens expire",
})
export class KeysRotateCommand extends CommandRunner {
  constructor(private readonly keys: KeyAdminService) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.keys.rotate());
  }
}
