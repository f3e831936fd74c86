import { registerDecorator, type ValidationArguments, type ValidationOptions } from 'class-validator';
import { parsePostLogoutRedirectUri } from './post-logout-redirect.js';
import { InvalidRedirectUrl } from './redirect-pattern.js';

/** A post-logout redirect URL (post-logout-redirect.ts); the message says what is wrong with it. */
export function IsPostLogoutRedirect(options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isPostLogoutRedirect',
      target: target.constructor,
      propertyName: propertyName as string,
      options,
      validator: {
        validate: (value: unknown) => typeof value === 'string' && reasonRejected(value) === null,
        // With { each: true } the message gets the whole array: report its first refused URL.
        defaultMessage: ({ value }: ValidationArguments) => {
          const values: unknown[] = Array.isArray(value) ? value : [value];
          const refused = values.find((url) => typeof url !== 'string' || reasonRejected(url) !== null);
          const reason = typeof refused === 'string' ? reasonRejected(refused) : 'must be a string';
          return `post-logout redirect ${JSON.stringify(refused)} ${reason}`;
        },
      },
    });
}

function reasonRejected(url: string): string | null {
  try {
    parsePostLogoutRedirectUri(url);
    return null;
  } catch (error) {
    if (error instanceof InvalidRedirectUrl) return error.message;
    throw error;
  }
}
