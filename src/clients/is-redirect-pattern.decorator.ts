import { registerDecorator, type ValidationArguments, type ValidationOptions } from 'class-validator';
import { InvalidRedirectUrl, parseRedirectPattern } from './redirect-pattern.js';

/** A redirect pattern in the contract's syntax; the message says what is wrong with it. */
export function IsRedirectPattern(options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isRedirectPattern',
      target: target.constructor,
      propertyName: propertyName as string,
      options,
      validator: {
        validate: (value: unknown) => typeof value === 'string' && reasonRejected(value) === null,
        // With { each: true } the message gets the whole array: report its first refused pattern.
        defaultMessage: ({ value }: ValidationArguments) => {
          const values: unknown[] = Array.isArray(value) ? value : [value];
          const refused = values.find((pattern) => typeof pattern !== 'string' || reasonRejected(pattern) !== null);
          const reason = typeof refused === 'string' ? reasonRejected(refused) : 'must be a string';
          return `redirect pattern ${JSON.stringify(refused)} ${reason}`;
        },
      },
    });
}

function reasonRejected(pattern: string): string | null {
  try {
    parseRedirectPattern(pattern);
    return null;
  } catch (error) {
    if (error instanceof InvalidRedirectUrl) return error.message;
    throw error;
  }
}
