import { readFile } from 'node:fs/promises';
import { Command, CommandRunner, Option } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { invalidInput } from '../../common/errors/app-error.js';
import { validateInput } from '../../common/validation/validate-input.js';
import { PublishNotificationDto } from '../dto/publish-notification.dto.js';
import { NotificationPublisher } from '../notification-publisher.service.js';

@Command({ name: 'notification:publish', description: 'publish a notification from a JSON file, like POST /voyage/notification/v1/notifications' })
export class NotificationPublishCommand extends CommandRunner {
  constructor(private readonly publisher: NotificationPublisher) {
    super();
  }

  async run(_args: string[], options: { file: string }): Promise<void> {
    let body: unknown;
    try {
      body = JSON.parse(await readFile(options.file, 'utf8'));
    } catch (error) {
      throw invalidInput(`cannot read ${options.file} as JSON: ${(error as Error).message}`);
    }
    // The same rules as the HTTP route's ValidationPipe: unknown fields are dropped, not refused.
    const dto = await validateInput(PublishNotificationDto, body, { whitelist: true });
    printJson(await this.publisher.publish(dto, null));
  }

  @Option({ flags: '--file <path>', description: 'JSON file with the notification fields and recipient', required: true })
  parseFile(value: string) {
    return value;
  }
}
