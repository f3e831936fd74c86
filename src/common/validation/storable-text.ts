import { ValidateBy, type ValidationOptions } from 'class-validator';

/** C0 controls, DEL and C1 controls. */
export const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** The same, except tab, line feed and carriage return. */
export const CONTROL_EXCEPT_LINE_BREAKS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
/** A UTF-16 surrogate without its other half: JSON can carry it, UTF-8 cannot, so PostgreSQL would store U+FFFD instead. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Checked at validation, so the caller gets a field error and nothing reaches the database: a
 * `text` column refuses U+0000, and the refusal would fail a whole shared transaction, other
 * callers' rows included; a lone surrogate would be stored as another text than the one the
 * caller sent. Other control characters have no business in what is pushed to devices.
 */
const refuse = (name: string, pattern: RegExp, message: string) => (options?: ValidationOptions) =>
  ValidateBy({ name, validator: { validate: (value: unknown) => typeof value !== 'string' || !pattern.test(value), defaultMessage: () => message } }, options);

/** One-line text (identifiers, names, statuses): no control characters at all. */
export const PlainText = refuse('plainText', CONTROL, '$property must not contain control characters');

/** Free text (warnings): line breaks and tabs allowed, other control characters (NUL included) not. */
export const StorableText = refuse('storableText', CONTROL_EXCEPT_LINE_BREAKS, '$property must not contain control characters other than tab and line breaks');

/** Text that UTF-8 can carry as it is: no lone surrogate. */
export const WellFormedText = refuse('wellFormedText', LONE_SURROGATE, '$property must be well-formed Unicode: it holds a lone surrogate (half of a UTF-16 pair)');
