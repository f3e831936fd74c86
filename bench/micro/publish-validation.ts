/**
 * What validating one publish body costs: class-validator alone (the DTO's rules) against the
 * service's path (a plain check in front, class-validator for whatever it does not accept).
 *
 *   taskset -c 0 npx tsx bench/micro/publish-validation.ts
 */
import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import { PublishNotificationDto } from '../../src/notification/publish/dto/publish-notification.dto.js';
import { readPublishBody } from '../../src/notification/publish/publish-body.pipe.js';
import { validNotification } from '../../test/factories/notification.factory.js';

const bodies = Array.from({ length: 20_000 }, () => validNotification('client-123'));
const classValidator = new ValidationPipe({ whitelist: true, transform: true });

async function measure(name: string, validate: (input: unknown) => Promise<unknown>) {
  for (let round = 0; round < 3; round++) {
    const start = process.hrtime.bigint();
    for (const input of bodies) await validate(input);
    if (round === 2) console.log(`${name}: ${(Number(process.hrtime.bigint() - start) / bodies.length / 1000).toFixed(1)} µs per body`);
  }
}

await measure('class-validator alone', (input) => classValidator.transform(input, { type: 'body', metatype: PublishNotificationDto }));
await measure('plain check, then class-validator', readPublishBody);
