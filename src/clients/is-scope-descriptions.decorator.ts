import { registerDecorator, type ValidationArguments } from 'class-validator';
import { CONTROL, LONE_SURROGATE } from '../common/validation/storable-text.js';

/** Longest scope description: a line on a phone's approval page, two at most. */
export const SCOPE_DESCRIPTION_MAX_LENGTH = 200;

/**
 * What the approval page shows for each scope, set by an operator: an object from scope to text,
 * for scopes the client has (its `scopes` property), each one line of 1 to 200 characters that
 * PostgreSQL stores as it is. The message names the first description refused and why.
 */
export function IsScopeDescriptions(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isScopeDescriptions',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate: (value: unknown, args: ValidationArguments) => reasonRefused(value, scopesOf(args)) === null,
        defaultMessage: (args: ValidationArguments) => reasonRefused(args.value, scopesOf(args)) ?? '',
      },
    });
}

const scopesOf = (args: ValidationArguments): unknown[] => {
  const scopes = (args.object as { scopes?: unknown }).scopes;
  return Array.isArray(scopes) ? scopes : [];
};

function reasonRefused(value: unknown, scopes: unknown[]): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'scope descriptions must be an object from scope to text';
  for (const [scope, text] of Object.entries(value)) {
    const named = `the description of scope ${JSON.stringify(scope)}`;
    if (!scopes.includes(scope)) return `${named} is for a scope the client does not have (its scopes: ${scopes.join(' ') || 'none'})`;
    if (typeof text !== 'string') return `${named} must be text`;
    if (text.trim() === '' || text.length > SCOPE_DESCRIPTION_MAX_LENGTH) return `${named} must be 1 to ${SCOPE_DESCRIPTION_MAX_LENGTH} characters (it has ${text.length})`;
    if (text !== text.trim()) return `${named} must not start or end with whitespace`;
    if (CONTROL.test(text)) return `${named} must be one line, without control characters`;
    if (LONE_SURROGATE.test(text)) return `${named} must be well-formed Unicode: it holds a lone surrogate (half of a UTF-16 pair)`;
  }
  return null;
}
