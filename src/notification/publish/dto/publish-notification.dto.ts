import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsNotEmpty, IsString, IsUUID, MaxLength, ValidateBy, ValidateNested } from 'class-validator';
import { PlainText, StorableText, WellFormedText } from '../../../common/validation/storable-text.js';

/** RFC 3339 in UTC or with an offset, with milliseconds, as the notification service's documented samples. */
export const RFC3339_MILLIS = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
const timestampMessage = '$property must be an RFC 3339 timestamp with milliseconds, e.g. 2026-11-21T08:30:00.000Z';

/** RFC 3339 §5.7: the day must exist in its month and year (2026-02-30 is not a date, though Date.parse rolls it over). */
export function isCalendarDate(value: string): boolean {
  const match = /^(\d{4})-(\d\d)-(\d\d)/.exec(value);
  if (!match) return false;
  const [year, month, day] = match.slice(1).map(Number);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

const IsTimestamp = () =>
  ValidateBy({
    name: 'isRfc3339Millis',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && RFC3339_MILLIS.test(value) && isCalendarDate(value),
      defaultMessage: () => timestampMessage,
    },
  });

/**
 * A UUID in any letter case, kept lower case (RFC 4122 §3: case-insensitive on input, lower case
 * on output), so one notification has one spelling: stored, pushed, listed and deduplicated alike.
 */
const IsUuid = () => applyDecorators(Transform(({ value }) => (typeof value === 'string' ? value.toLowerCase() : value)), IsUUID('all'));

export class DeliverableDto {
  @ApiProperty({ example: 'pdf' })
  @IsString()
  @PlainText()
  @WellFormedText()
  @IsNotEmpty()
  @MaxLength(100)
  productType: string;
}

/** A report notification plus `recipient`, the client whose connections receive it. */
export class PublishNotificationDto {
  @ApiProperty({ description: 'client_id of the receiving client' })
  @IsString()
  @PlainText()
  @WellFormedText()
  @IsNotEmpty()
  @MaxLength(100)
  recipient: string;

  @ApiProperty({ format: 'uuid', description: 'any letter case; stored, pushed and listed lower case' })
  @IsUuid()
  correlationId: string;

  @ApiProperty({ example: 'RouteAdvice' })
  @IsString()
  @PlainText()
  @WellFormedText()
  @IsNotEmpty()
  @MaxLength(200)
  productName: string;

  @ApiProperty({ example: 'RouteConfigurationService' })
  @IsString()
  @PlainText()
  @WellFormedText()
  @IsNotEmpty()
  @MaxLength(200)
  origin: string;

  @ApiProperty({ example: 'New' })
  @IsString()
  @PlainText()
  @WellFormedText()
  @IsNotEmpty()
  @MaxLength(100)
  status: string;

  @ApiProperty({ example: '2026-11-21T08:30:00.000Z' })
  @IsTimestamp()
  statusTimestamp: string;

  @ApiProperty({ type: [DeliverableDto] })
  @IsArray()
  @ArrayMaxSize(50)
  @ValidateNested({ each: true })
  @Type(() => DeliverableDto)
  deliverables: DeliverableDto[];

  @ApiProperty()
  @IsString()
  @PlainText()
  @WellFormedText()
  @IsNotEmpty()
  @MaxLength(200)
  customerReferenceId: string;

  @ApiProperty({ format: 'uuid', description: 'any letter case; stored, pushed and listed lower case' })
  @IsUuid()
  routeCalculationScheduleId: string;

  @ApiProperty({ type: [String] })
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @StorableText({ each: true })
  @WellFormedText({ each: true })
  @MaxLength(2000, { each: true })
  warnings: string[];

  @ApiProperty({ example: '2026-11-21T08:30:00.000Z' })
  @IsTimestamp()
  creationDate: string;
}

/** The pushed message: exactly the notification's fields, in their documented order, nothing else. */
export function toPushedMessage(dto: PublishNotificationDto): string {
  return JSON.stringify({
    correlationId: dto.correlationId,
    productName: dto.productName,
    origin: dto.origin,
    status: dto.status,
    statusTimestamp: dto.statusTimestamp,
    deliverables: dto.deliverables.map((deliverable) => ({ productType: deliverable.productType })),
    customerReferenceId: dto.customerReferenceId,
    routeCalculationScheduleId: dto.routeCalculationScheduleId,
    warnings: dto.warnings,
    creationDate: dto.creationDate,
  });
}
