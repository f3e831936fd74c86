import { describe, expect, it } from 'vitest';
import { errorDescription, MAX_DESCRIPTION_LENGTH } from '../../../src/common/errors/error-description.js';

describe('errorDescription', () => {
  it('keeps printable ASCII other than the quote, the backslash and the percent sign as it is', () => {
    expect(errorDescription("grant_type x-y_z.1~!#$&'()*+,/:;<=>?@[]^`{|} is not supported here")).toBe(
      "grant_type x-y_z.1~!#$&'()*+,/:;<=>?@[]^`{|} is not supported here",
    );
  });

  it('percent-encodes a lone surrogate as the replacement character', () => {
    expect(errorDescription('a\ud800b')).toBe('a%EF%BF%BDb');
  });

  it('never cuts an escape in two', () => {
    for (let prefix = 0; prefix < 3; prefix++) {
      const description = errorDescription(`${'x'.repeat(prefix)}${'"'.repeat(MAX_DESCRIPTION_LENGTH)}`);
      expect(description.length).toBeLessThanOrEqual(MAX_DESCRIPTION_LENGTH);
      expect(description).toMatch(/^x*(%22)+\.\.\.$/);
    }
  });
});
