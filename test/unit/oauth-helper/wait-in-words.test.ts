import { describe, expect, it } from 'vitest';
import { waitInWords } from '../../../src/oauth-helper/wait-in-words.js';

describe('waitInWords', () => {
  it.each([
    [1, '1 second'],
    [2, '2 seconds'],
    [59, '59 seconds'],
    [60, '1 minute'],
    [61, '2 minutes'],
    [900, '15 minutes'],
  ])('says %i s as "%s"', (seconds, words) => {
    expect(waitInWords(seconds)).toBe(words);
  });
});
