import { BadRequestException, ValidationPipe } from '@nestjs/common';
import { PublishNotificationDto } from './dto/publish-notification.dto.js';

/**
 * The one set of rules for a publish body, wherever it comes from: the single route's body, an
 * element of a batch, the CLI's file. Unknown fields are dropped, not refused.
 */
export const PUBLISH_BODY_PIPE = new ValidationPipe({ whitelist: true, transform: true });

const BODY_METADATA = { type: 'body', metatype: PublishNotificationDto } as const;

/** A valid publish body, or its field errors exactly as the single route would answer them. */
export async function readPublishBody(input: unknown): Promise<{ body: PublishNotificationDto } | { errors: string[] }> {
  try {
    return { body: (await PUBLISH_BODY_PIPE.transform(input, BODY_METADATA)) as PublishNotificationDto };
  } catch (error) {
    if (!(error instanceof BadRequestException)) throw error;
    const { message } = error.getResponse() as { message: string | string[] };
    return { errors: Array.isArray(message) ? message : [message] };
  }
}
