import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { KeysService } from '../keys.service.js';

@Command({ name: 'keys:rotate', description: 'sign with a new key; the old one stays in the JWKS until its tokens expire' })
export class KeysRotateCommand extends CommandRunner {
  constructor(private readonly keys: KeysService) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.keys.rotate());
  }
}
