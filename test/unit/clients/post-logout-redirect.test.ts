import { describe, expect, it } from 'vitest';
import { isPostLogoutRedirectRegistered, parsePostLogoutRedirectUri } from '../../../src/clients/post-logout-redirect.js';
import { InvalidRedirectUrl } from '../../../src/clients/redirect-pattern.js';

describe('parsePostLogoutRedirectUri', () => {
  it.each([['https://app.example.com/out'], ['https://app.example.com/out?lang=en'], ['http://127.0.0.1:3000/'], ['http://127.8.9.10/x'], ['http://[::1]/x'], ['http://localhost:8080/x']])(
    'accepts %s',
    (url) => {
      expect(parsePostLogoutRedirectUri(url).href).toBe(url);
    },
  );

  it.each([
    ['http://app.example.com/out', /https/],
    ['http://192.168.1.1/out', /https/],
    ['http://localhost.example.com/out', /https/],
    ['http://[::ffff:7f00:1]/out', /https/],
    ['https://app.example.com/*', /exact URL/],
    ['https://app.example.com/out#x', /fragment/],
    ['https://u@app.example.com/out', /user information/],
    ['http://evil.example@127.0.0.1:3000/bye', /user information/],
    ['https://app.example.com@evil.example/out', /user information/],
    ['app.example.com/out', /absolute/],
    ['https://2130706433/out', /canonical/],
  ])('refuses %s', (url, reason) => {
    expect(() => parsePostLogoutRedirectUri(url)).toThrow(InvalidRedirectUrl);
    expect(() => parsePostLogoutRedirectUri(url)).toThrow(reason);
  });
});

describe('isPostLogoutRedirectRegistered', () => {
  const registered = ['https://App.Example.com:443', 'https://app.example.com/out?lang=en', 'http://127.0.0.1:3000/bye'];

  it('allows a registered URL, compared as serialised: host case, the default port and an empty path do not matter', () => {
    for (const url of ['https://app.example.com/', 'https://app.example.com', 'HTTPS://APP.EXAMPLE.COM:443/', 'https://app.example.com/out?lang=en', 'http://127.0.0.1:3000/bye']) {
      expect(isPostLogoutRedirectRegistered(url, registered), url).toBe(true);
    }
  });

  it('refuses anything else: another path, query, port, scheme, a fragment, a prefix or a malformed URL', () => {
    for (const url of [
      'https://app.example.com/out',
      'https://app.example.com/out?lang=de',
      'https://app.example.com/out?lang=en&x=1',
      'https://app.example.com:8443/',
      'http://app.example.com/',
      'https://app.example.com/#x',
      'https://app.example.com.evil.example/',
      'http://127.0.0.1:3001/bye',
      'http://127.0.0.1:3000/bye/',
      'https://app.example.com/../',
      // The registered address behind user information: the browser would go there, but no one registered it so.
      'http://evil.example@127.0.0.1:3000/bye',
      'https://user:pw@app.example.com/out?lang=en',
      '',
      'not a url',
    ]) {
      expect(isPostLogoutRedirectRegistered(url, registered), url).toBe(false);
    }
    expect(isPostLogoutRedirectRegistered('https://app.example.com/', [])).toBe(false);
  });
});
