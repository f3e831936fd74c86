import { BadRequestException, Injectable, type PipeTransform, ValidationPipe } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { CONTROL, CONTROL_EXCEPT_LINE_BREAKS, LONE_SURROGATE } from '../../common/validation/storable-text.js';
import { isCalendarDate, PublishNotificationDto, RFC3339_MILLIS } from './dto/publish-notification.dto.js';

/**
 * The one set of rules for a publish body, wherever it comes from: the single route's body, an
 * element of a batch, the CLI's file. `PublishNotificationDto`'s class-validator rules are the
 * rules; unknown fields are dropped, not refused.
 *
 * class-transformer and class-validator cost about 23 µs a body, which at batch rates is a third
 * of the core. So a body is first tried against a plain check that accepts only bodies those rules
 * accept (a property test holds it to that) and builds the same DTO in about 1 µs; whatever it
 * does not accept at once, bad bodies included, goes through class-validator, whose field errors
 * are the ones answered.
 */
const VALIDATION = new ValidationPipe({ whitelist: true, transform: true });
const BODY_METADATA = { type: 'body', metatype: PublishNotificationDto } as const;

/** The single publish route's body pipe. */
@Injectable()
export class PublishBodyPipe implements PipeTransform<unknown, Promise<PublishNotificationDto>> {
  async transform(input: unknown): Promise<PublishNotificationDto> {
    return acceptedAtOnce(input) ?? ((await VALIDATION.transform(input, BODY_METADATA)) as PublishNotificationDto);
  }
}

/** A valid publish body, or its field errors exactly as the single route would answer them. */
export async function readPublishBody(input: unknown): Promise<{ body: PublishNotificationDto } | { errors: string[] }> {
  const body = acceptedAtOnce(input);
  if (body) return { body };
  try {
    return { body: (await VALIDATION.transform(input, BODY_METADATA)) as PublishNotificationDto };
  } catch (error) {
    if (!(error instanceof BadRequestException)) throw error;
    const { message } = error.getResponse() as { message: string | string[] };
    return { errors: Array.isArray(message) ? message : [message] };
  }
}

/**
 * The DTO class-validator would make of `input`, if the checks below already show it is valid;
 * undefined otherwise (which says nothing: class-validator decides). Each check is as strict as
 * the DTO's rule or stricter: a length counts UTF-16 units, which is never less than the
 * characters class-validator counts.
 */
export function acceptedAtOnce(input: unknown): PublishNotificationDto | undefined {
  if (!isRecord(input)) return undefined;
  const { recipient, correlationId, productName, origin, status, statusTimestamp, deliverables, customerReferenceId, routeCalculationScheduleId, warnings, creationDate } =
    input;
  if (
    !plainText(recipient, 100) ||
    !uuid(correlationId) ||
    !plainText(productName, 200) ||
    !plainText(origin, 200) ||
    !plainText(status, 100) ||
    !timestamp(statusTimestamp) ||
    !Array.isArray(deliverables) ||
    deliverables.length > 50 ||
    !deliverables.every((deliverable) => isRecord(deliverable) && plainText(deliverable.productType, 100)) ||
    !plainText(customerReferenceId, 200) ||
    !uuid(routeCalculationScheduleId) ||
    !Array.isArray(warnings) ||
    warnings.length > 100 ||
    !warnings.every((warning) => typeof warning === 'string' && warning.length <= 2000 && !CONTROL_EXCEPT_LINE_BREAKS.test(warning) && !LONE_SURROGATE.test(warning)) ||
    !timestamp(creationDate)
  ) {
    return undefined;
  }
  return Object.assign(new PublishNotificationDto(), {
    recipient,
    correlationId: correlationId.toLowerCase(),
    productName,
    origin,
    status,
    statusTimestamp,
    deliverables: deliverables.map((deliverable) => ({ productType: (deliverable as { productType: string }).productType })),
    customerReferenceId,
    routeCalculationScheduleId: routeCalculationScheduleId.toLowerCase(),
    warnings: [...warnings],
    creationDate,
  });
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const plainText = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max && !CONTROL.test(value) && !LONE_SURROGATE.test(value);
const uuid = (value: unknown): value is string => typeof value === 'string' && isUUID(value, 'all');
const timestamp = (value: unknown): value is string => typeof value === 'string' && RFC3339_MILLIS.test(value) && isCalendarDate(value);
