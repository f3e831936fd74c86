import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { PublishNotificationDto } from './publish-notification.dto.js';

/** 202 of a publish. */
export class PublishAcceptedDto {
  @ApiProperty({ format: 'uuid', description: 'the stored notification' })
  id: string;

  @ApiPropertyOptional({ enum: [true], description: 'present on a repeat of (recipient, correlationId, status): nothing was stored or pushed, `id` is the stored one' })
  duplicate?: true;
}

/** A notification as pushed on the stream and listed by the history route: the published fields without `recipient`. */
export class NotificationMessageDto extends OmitType(PublishNotificationDto, ['recipient'] as const) {}
