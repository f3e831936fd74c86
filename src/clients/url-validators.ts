import { registerDecorator, type ValidationArguments, type ValidationOptions } from 'class-validator';
import { parsePostLogoutRedirectUri } from './post-logout-redirect.js';
import { InvalidRedirectUrl, parseRedirectPattern } from './redirect-pattern.js';

/**
 * A class-validator decorator for a string `parse` accepts (it throws InvalidRedirectUrl with the
 * reason otherwise); the message names the first refused value and says what is wrong with it.
 */
function parsedBy(name: string, label: string, parse: (text: string) => unknown) {
  const reasonRejected = (text: string): string | null => {
    try {
      parse(text);
      return null;
    } catch (error) {
      if (error instanceof InvalidRedirectUrl) return error.message;
      throw error;
    }
  };
  return (options?: ValidationOptions): PropertyDecorator =>
    (target, propertyName) =>
      registerDecorator({
        name,
        target: target.constructor,
        propertyName: propertyName as string,
        options,
        validator: {
          validate: (value: unknown) => typeof value === 'string' && reasonRejected(value) === null,
          // With { each: true } the message gets the whole array: report its first refused value.
          defaultMessage: ({ value }: ValidationArguments) => {
            const values: unknown[] = Array.isArray(value) ? value : [value];
            const refused = values.find((text) => typeof text !== 'string' || reasonRejected(text) !== null);
            const reason = typeof refused === 'string' ? reasonRejected(refused) : 'must be a string';
            return `${label} ${JSON.stringify(refused)} ${reason}`;
          },
        },
      });
}

/** A redirect pattern in the contract's syntax (redirect-pattern.ts). */
export const IsRedirectPattern = parsedBy('isRedirectPattern', 'redirect pattern', parseRedirectPattern);

/** A post-logout redirect URL (post-logout-redirect.ts). */
export const IsPostLogoutRedirect = parsedBy('isPostLogoutRedirect', 'post-logout redirect', parsePostLogoutRedirectUri);
