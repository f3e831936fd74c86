import { describe, expect, it } from 'vitest';
import { OAuthError } from '../../../src/oauth/oauth-error.js';
import { readOAuthParams, requireParam } from '../../../src/oauth/oauth-params.js';
import { s256Challenge, verifierMatches } from '../../../src/oauth/pkce.js';
import { assertScopeAllowed, formatScope, parseScope } from '../../../src/oauth/scope.js';
import { PollLimiter } from '../../../src/oauth-helper/poll-limiter.js';

const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error as OAuthError;
  }
  throw new Error('expected an OAuthError');
};

describe('readOAuthParams', () => {
  it('keeps single values and treats empty ones as absent', () => {
    const params = readOAuthParams({ grant_type: 'refresh_token', scope: '', extra: 'x' });
    expect([...params]).toEqual([
      ['grant_type', 'refresh_token'],
      ['extra', 'x'],
    ]);
  });

  it('refuses a repeated parameter with invalid_request', () => {
    expect(errorOf(() => readOAuthParams({ code: ['a', 'b'] }))).toMatchObject({ error: 'invalid_request', description: 'parameter code is repeated' });
  });

  it('refuses a body that is not a form', () => {
    expect(errorOf(() => readOAuthParams('grant_type=x')).error).toBe('invalid_request');
    expect(errorOf(() => readOAuthParams({ nested: { a: 1 } })).error).toBe('invalid_request');
    expect(readOAuthParams(undefined).size).toBe(0);
  });

  it('names the missing parameter', () => {
    expect(errorOf(() => requireParam(new Map(), 'code')).description).toBe('missing parameter code');
  });
});

describe('PKCE S256 (RFC 7636 appendix B)', () => {
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

  it('computes the RFC test vector', () => {
    expect(s256Challenge(verifier)).toBe(challenge);
  });

  it('matches only the right verifier of valid syntax', () => {
    expect(verifierMatches(verifier, challenge)).toBe(true);
    expect(verifierMatches(`${verifier.slice(0, -1)}l`, challenge)).toBe(false);
    expect(verifierMatches('short', s256Challenge('short'))).toBe(false);
    expect(verifierMatches(`${verifier}!`, s256Challenge(`${verifier}!`))).toBe(false);
  });
});

describe('scope', () => {
  it('parses space-delimited scope tokens, dropping duplicates', () => {
    expect(parseScope(undefined)).toBeNull();
    expect(parseScope('b a b')).toEqual(['b', 'a']);
    expect(formatScope(['b', 'a'])).toBe('b a');
    expect(formatScope(null)).toBeNull();
  });

  it('refuses malformed scope with invalid_request and unknown scope with invalid_scope', () => {
    expect(errorOf(() => parseScope('a  b')).error).toBe('invalid_request');
    expect(errorOf(() => parseScope('a"b')).error).toBe('invalid_request');
    expect(errorOf(() => assertScopeAllowed(['a', 'c'], ['a', 'b']))).toMatchObject({ error: 'invalid_scope', status: 400 });
    expect(() => assertScopeAllowed(null, [])).not.toThrow();
  });
});

describe('OAuthError', () => {
  it('answers 401 for invalid_client and 400 for the other client errors', () => {
    expect(new OAuthError('invalid_client', 'x').status).toBe(401);
    expect(new OAuthError('invalid_grant', 'x').status).toBe(400);
    expect(new OAuthError('invalid_client', 'x', { status: 404 }).status).toBe(404);
  });
});

describe('PollLimiter', () => {
  it('lets the first poll through and asks a too-early one to wait the rest of the interval', () => {
    const limiter = new PollLimiter(5_000, 60_000);
    expect(limiter.retryAfter('s', 1_000)).toBe(0);
    expect(limiter.retryAfter('s', 2_000)).toBe(4);
    expect(limiter.retryAfter('s', 5_999)).toBe(1);
    expect(limiter.retryAfter('s', 6_000)).toBe(0);
    expect(limiter.retryAfter('other', 6_001)).toBe(0);
  });
});
