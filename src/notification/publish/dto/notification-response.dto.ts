import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { PublishNotificationDto } from './publish-notification.dto.js';

/** 202 of a publish. */
export class PublishAcceptedDto {
  @ApiProperty({ format: 'uuid', description: 'the stored notification' })
  id: string;

  @ApiPropertyOptional({ enum: [true], description: 'present on a repeat of (recipient, correlationId, status): nothing was stored or pushed, `id` is the stored one' })
  duplicate?: true;
}

/** A notification as pushed on the stream: the published fields without `recipient`. */
export class NotificationMessageDto extends OmitType(PublishNotificationDto, ['recipient'] as const) {}

/** A notification as the history route lists it: as pushed, and its place in the recipient's order. */
export class ListedNotificationDto extends NotificationMessageDto {
  @ApiProperty({ type: 'integer', format: 'int64', description: "its sequence number: ascending in the recipient's publish order; `after` takes it" })
  seq: number;
}

/** One element's result in a batch: stored (as a single publish answers), or refused. */
export class BatchElementResultDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'the stored notification (absent when the element was refused)' })
  id?: string;

  @ApiPropertyOptional({ enum: [true], description: 'as for a single publish: a repeat, nothing stored or pushed' })
  duplicate?: true;

  @ApiPropertyOptional({ enum: [400], description: 'present when the element was refused: nothing was stored for it' })
  status?: 400;

  @ApiPropertyOptional({ type: [String], description: "the element's field errors, as the single route answers them" })
  errors?: string[];
}

/** 202 of a batch publish. */
export class BatchAcceptedDto {
  @ApiProperty({ type: [BatchElementResultDto], description: 'one result per element, in the order of the request' })
  results: BatchElementResultDto[];
}
