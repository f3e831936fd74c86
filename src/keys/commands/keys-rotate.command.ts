import { Command, CommandRunner, Option } from 'nest-commander';
import { invalidInput } from '../../common/errors/app-error.js';
import { printJson } from '../../common/cli/output.js';
import { KeyAdminService } from '../key-admin.service.js';
import { SIGNING_ALGS, type SigningAlg } from '../signing-key.entity.js';

@Command({
  name: 'keys:rotate',
  description: `sign with a new key of each algorithm (${SIGNING_ALGS.join(', ')}; one with --alg); the old ones stay in the JWKS until their tokens expire`,
})
export class KeysRotateCommand extends CommandRunner {
  constructor(private readonly keys: KeyAdminService) {
    super();
  }

  async run(_args: string[], options: { alg?: SigningAlg }): Promise<void> {
    printJson(await this.keys.rotate(options.alg));
  }

  @Option({ flags: '--alg <alg>', description: `rotate only the key of this algorithm: ${SIGNING_ALGS.join(' or ')}` })
  parseAlg(value: string): SigningAlg {
    if (!(SIGNING_ALGS as readonly string[]).includes(value)) throw invalidInput(`--alg must be ${SIGNING_ALGS.join(' or ')} (got ${JSON.stringify(value)})`);
    return value as SigningAlg;
  }
}
