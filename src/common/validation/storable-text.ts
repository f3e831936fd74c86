import { ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * Text PostgreSQL can store: no NUL character (a `text` column refuses U+0000, and the refusal
 * would fail the whole transaction, other callers' rows included). Checked at validation, so the
 * caller gets a field error and nothing reaches the database.
 */
export const StorableText = (options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'storableText',
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || !value.includes('\u0000'),
        defaultMessage: () => '$property must not contain the NUL character (\\u0000)',
      },
    },
    options,
  );
