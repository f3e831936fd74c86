import { readFile } from 'node:fs/promises';
import { Command, CommandRunner, Option } from 'nest-commander';
import { printJson } from '../../../common/cli/output.js';
import { invalidInput } from '../../../common/errors/app-error.js';
import { Env } from '../../../config/env.js';
import { NotificationPublisherService } from '../notification-publisher.service.js';
import { readPublishBody } from '../publish-body.pipe.js';

@Command({
  name: 'notification:publish',
  description:
    'publish a notification from a JSON file, like POST /voyage/notification/v1/notifications; a JSON array publishes each element, like the batch route',
})
export class NotificationPublishCommand extends CommandRunner {
  constructor(
    private readonly publisher: NotificationPublisherService,
    private readonly env: Env,
  ) {
    super();
  }

  async run(_args: string[], options: { file: string }): Promise<void> {
    let input: unknown;
    try {
      input = JSON.parse(await readFile(options.file, 'utf8'));
    } catch (error) {
      throw invalidInput(`cannot read ${options.file} as JSON: ${(error as Error).message}`);
    }
    if (Array.isArray(input)) return this.publishAll(input);
    const read = await readPublishBody(input);
    if ('errors' in read) throw invalidInput(read.errors.join('; '));
    printJson(await this.publisher.publish(read.body, null));
  }

  /** Prints every element's result, as the batch route answers; exit 1 if any element was refused. */
  private async publishAll(input: unknown[]): Promise<void> {
    const max = this.env.PUBLISH_BATCH_MAX;
    if (input.length === 0 || input.length > max) throw invalidInput(`the file must hold 1 to ${max} notifications (PUBLISH_BATCH_MAX), not ${input.length}`);
    const results = await this.publisher.publishBatch(await Promise.all(input.map(readPublishBody)), null);
    printJson({ results });
    const refused = positionsWhere(results, (result) => 'errors' in result);
    if (refused.length === 0) return;
    const repeats = positionsWhere(results, (result) => 'duplicate' in result && result.duplicate === true);
    const published = positionsWhere(results, (result) => !('errors' in result) && !('duplicate' in result && result.duplicate));
    throw new Error(
      `${refused.length} of ${results.length} notifications were refused: ${elements(refused)} (see their errors above); published: ${elements(published)}` +
        (repeats.length > 0 ? `; repeats of notifications published before, not published again: ${elements(repeats)}` : ''),
    );
  }

  @Option({ flags: '--file <path>', description: 'JSON file with the notification fields and recipient, or an array of them', required: true })
  parseFile(value: string) {
    return value;
  }
}

/** The positions in the array (from 1) of the results that `match`. */
const positionsWhere = <T>(results: T[], match: (result: T) => boolean) => results.flatMap((result, index) => (match(result) ? [index + 1] : []));

const elements = (positions: number[]) => (positions.length === 0 ? 'none' : `element${positions.length === 1 ? '' : 's'} ${positions.join(', ')}`);
