import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PublishNotificationDto } from '../../../src/notification/publish/dto/publish-notification.dto.js';
import { acceptedAtOnce, readPublishBody } from '../../../src/notification/publish/publish-body.pipe.js';
import { validNotification } from '../../factories/notification.factory.js';

/** The rules as written on the DTO, without the quick check in front of them. */
const classValidator = new ValidationPipe({ whitelist: true, transform: true });
const validate = (input: unknown) => classValidator.transform(input, { type: 'body', metatype: PublishNotificationDto }) as Promise<PublishNotificationDto>;

const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);

const awkwardText = fc.oneof(
  fc.string({ maxLength: 210 }),
  fc.string({ unit: 'grapheme', maxLength: 120 }),
  fc.string({ unit: 'binary', maxLength: 120 }),
  fc.constantFrom('', ' ', '\t', 'a\nb', 'a\u0000b', 'a\u007fb', 'a\u0085b', '\ud83d', '\ud83d\ude00'.repeat(100), 'x'.repeat(100), 'x'.repeat(101), 'x'.repeat(200), 'x'.repeat(201)),
);
const anyValue = fc.oneof(awkwardText, fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.array(fc.string(), { maxLength: 3 }), fc.dictionary(fc.string(), fc.string()));
const uuid = fc.oneof(fc.uuid(), fc.uuid().map((value) => value.toUpperCase()), fc.constantFrom('00000000-0000-0000-0000-000000000000', 'not-a-uuid', ''));
const timestamp = fc.oneof(
  fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((date) => date.toISOString()),
  fc.constantFrom('2026-11-21T08:30:00.000+01:00', '2026-02-30T08:30:00.000Z', '2024-02-29T00:00:00.000Z', '2026-11-21T08:30:00Z', '2026-11-21T24:00:00.000Z', '2026-11-21t08:30:00.000z'),
);
const deliverable = fc.oneof(fc.record({ productType: fc.oneof(fc.constantFrom('pdf', 'gpx'), awkwardText) }), fc.record({ productType: fc.constant('pdf'), extra: fc.string() }), anyValue);
const warning = fc.oneof(fc.constantFrom('Image 3 of the PDF could not be generated', 'line one\nline two\r\n\tthree', 'x'.repeat(2000), 'x'.repeat(2001)), awkwardText);

/** A one-line text field: usually a plain value, sometimes one at or past its limit, sometimes anything. */
const text = (usual: string, max: number) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(usual) },
    { weight: 1, arbitrary: fc.constantFrom(max, max + 1).map((length) => 'x'.repeat(length)) },
    { weight: 1, arbitrary: anyValue },
  );

/** Mostly valid bodies, each field sometimes replaced by something awkward (undefined drops it), sometimes with a stray field. */
const body = fc
  .record(
    {
      recipient: text('client-123', 100),
      correlationId: fc.oneof({ weight: 4, arbitrary: uuid }, { weight: 1, arbitrary: anyValue }),
      productName: text('RouteAdvice', 200),
      origin: text('RouteConfigurationService', 200),
      status: text('New', 100),
      statusTimestamp: fc.oneof({ weight: 4, arbitrary: timestamp }, { weight: 1, arbitrary: anyValue }),
      deliverables: fc.oneof(
        { weight: 4, arbitrary: fc.array(fc.record({ productType: fc.constantFrom('pdf', 'gpx') }), { maxLength: 3 }) },
        { weight: 2, arbitrary: fc.array(deliverable, { maxLength: 3 }) },
        { weight: 1, arbitrary: fc.constantFrom(50, 51).map((length) => Array.from({ length }, () => ({ productType: 'pdf' }))) },
        { weight: 1, arbitrary: anyValue },
      ),
      customerReferenceId: text('CUST-REF-42', 200),
      routeCalculationScheduleId: fc.oneof({ weight: 4, arbitrary: uuid }, { weight: 1, arbitrary: anyValue }),
      warnings: fc.oneof(
        { weight: 4, arbitrary: fc.array(warning, { maxLength: 2 }) },
        { weight: 1, arbitrary: fc.constantFrom(100, 101).map((length) => Array.from({ length }, () => 'w')) },
        { weight: 1, arbitrary: anyValue },
      ),
      creationDate: fc.oneof({ weight: 4, arbitrary: timestamp }, { weight: 1, arbitrary: anyValue }),
      unknownField: fc.anything(),
    },
    { requiredKeys: ['recipient', 'correlationId', 'productName', 'origin', 'status', 'statusTimestamp', 'deliverables', 'customerReferenceId', 'routeCalculationScheduleId', 'warnings', 'creationDate'] },
  )
  // A body as the route gets it: what JSON gives back.
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown);

describe('the quick check in front of the publish body rules', () => {
  it('accepts only bodies class-validator accepts, and makes the DTO class-validator makes of them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(body, fc.anything()), async (input) => {
        const quick = acceptedAtOnce(input);
        if (!quick) return;
        const expected = await validate(input);
        expect(quick).toBeInstanceOf(PublishNotificationDto);
        expect(JSON.parse(JSON.stringify(quick))).toEqual(JSON.parse(JSON.stringify(expected)));
      }),
      { numRuns: RUNS },
    );
  });

  it('answers every body exactly as class-validator alone would: the same DTO, or the same field errors', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (input) => {
        const alone = await validate(input).then(
          (dto) => ({ body: JSON.parse(JSON.stringify(dto)) }),
          (error: { getResponse(): { message: string[] } }) => ({ errors: error.getResponse().message }),
        );
        const answered = await readPublishBody(input);
        expect('body' in answered ? { body: JSON.parse(JSON.stringify(answered.body)) } : answered).toEqual(alone);
      }),
      { numRuns: RUNS },
    );
  });

  it('takes the usual body without class-validator', () => {
    const usual = {
      ...validNotification('client-123', { warnings: ['Image 3 of the PDF could not be generated', 'two\nlines'], creationDate: '2026-11-21T08:29:59.987+02:00' }),
      extra: 'dropped',
    };
    const { extra: _dropped, ...expected } = usual;
    expect(acceptedAtOnce(usual)).toEqual(Object.assign(new PublishNotificationDto(), expected));
  });
});
