import { describe, expect, it } from 'vitest';
import type { ClientEntity } from '../../../src/clients/client.entity.js';
import { isPostLogoutRedirectRegistered } from '../../../src/clients/post-logout-redirect.js';
import { InvalidRedirectUrl, isAppRedirectAllowed, isRedirectAllowed, parseRedirectPattern, parseRedirectUrl, readRedirectUrl } from '../../../src/clients/redirect-pattern.js';
import { readAuthorizationRequest } from '../../../src/oauth-helper/authorization-request.js';

const allowed = (url: string, ...patterns: string[]) => isRedirectAllowed(parseRedirectUrl(url), patterns);

describe('parseRedirectUrl', () => {
  it.each([
    ['http://192.168.1.20:8080/callback'],
    ['https://device.example.com/cb?x=1'],
    ['http://localhost/cb'],
    ['http://[::1]:9000/cb'],
  ])('accepts %s', (url) => {
    expect(parseRedirectUrl(url).href).toBe(url);
  });

  it.each([
    ['ftp://host/cb', /http or https/],
    ['//host/cb', /absolute/],
    ['/cb', /absolute/],
    ['javascript:alert(1)', /absolute/],
    ['http://user:pw@host/cb', /user information/],
    ['http://@host/cb', /user information/],
    ['http://evil.com\\@good.com/cb', /backslash/],
    ['http://host/cb#frag', /fragment/],
    ['http://host/cb#', /fragment/],
    ['http://2130706433/cb', /canonical/],
    ['http://0x7f.0.0.1/cb', /canonical/],
    ['http://0177.0.0.1/cb', /canonical/],
    ['http://127.1/cb', /canonical/],
    ['http://192.168.001.010/cb', /canonical/],
    ['http://127.0.0.1./cb', /canonical/],
    ['http://%31%32%37.0.0.1/cb', /canonical/],
    ['http://host/a/../cb', /dot segments/],
    ['http://host/a/%2e%2e/cb', /dot segments/],
    ['http://host/./cb', /dot segments/],
    ['http://ho st/cb', /spaces/],
    ['http://host/c\tb', /control/],
    ['http:///cb', /canonical|absolute/],
  ])('refuses %s', (url, reason) => {
    expect(() => parseRedirectUrl(url)).toThrow(InvalidRedirectUrl);
    expect(() => parseRedirectUrl(url)).toThrow(reason);
  });
});

describe('parseRedirectPattern', () => {
  it('reads exact URLs and private ranges', () => {
    expect(parseRedirectPattern('https://app.example.com/cb')).toEqual({ kind: 'exact', url: 'https://app.example.com/cb' });
    expect(parseRedirectPattern('http://192.168.0.0/16:*/callback')).toMatchObject({ kind: 'range', prefix: 16, port: '*', path: '/callback' });
    expect(parseRedirectPattern('http://10.0.0.0/8:8080/cb')).toMatchObject({ port: 8080 });
    expect(parseRedirectPattern('http://[fd00::/8]:*/cb')).toMatchObject({ kind: 'range', prefix: 8 });
  });

  it.each([
    ['http://0.0.0.0/0:*/cb', /private or loopback/],
    ['http://8.8.8.0/24:*/cb', /private or loopback/],
    ['http://10.0.0.0/7:*/cb', /private or loopback/],
    ['http://192.168.0.0/33:*/cb', /prefix/],
    ['http://192.168.0.0/16:70000/cb', /port/],
    ['http://192.168.0.0/16:*/a/../cb', /dot segments/],
    ['http://[2001:db8::/32]:*/cb', /private or loopback/],
    ['http://192.168.00.0/16:*/cb', /canonical/],
    ['http://example.com/*', /\* only as the port of an address range/],
    ['http://*.example.com/cb', /\* only as the port of an address range/],
    ['https://app.example.com:*/cb', /absolute http\(s\) URL/],
    ['http://192.168.0.0/16:*/cb/*', /\* only as the port of an address range/],
  ])('refuses %s', (pattern, reason) => {
    expect(() => parseRedirectPattern(pattern)).toThrow(reason);
  });
});

describe('isRedirectAllowed', () => {
  it('matches exact URLs exactly', () => {
    expect(allowed('https://app.example.com/cb', 'https://app.example.com/cb')).toBe(true);
    expect(allowed('https://app.example.com/cb/', 'https://app.example.com/cb')).toBe(false);
    expect(allowed('https://app.example.com/cb?x=1', 'https://app.example.com/cb')).toBe(false);
    expect(allowed('http://app.example.com/cb', 'https://app.example.com/cb')).toBe(false);
    expect(allowed('https://app.example.com.evil.com/cb', 'https://app.example.com/cb')).toBe(false);
  });

  it('matches addresses inside a range, with any port for *', () => {
    const pattern = 'http://192.168.0.0/16:*/callback';
    expect(allowed('http://192.168.4.7:51234/callback', pattern)).toBe(true);
    expect(allowed('http://192.168.4.7/callback', pattern)).toBe(true);
    expect(allowed('http://192.169.4.7:1/callback', pattern)).toBe(false);
    expect(allowed('https://192.168.4.7:1/callback', pattern)).toBe(false);
    expect(allowed('http://192.168.4.7:1/callback/x', pattern)).toBe(false);
    expect(allowed('http://192.168.4.7:1/callback?next=http://evil', pattern)).toBe(false);
    expect(allowed('http://localhost:1/callback', pattern)).toBe(false);
  });

  it('requires the given port, or the default one when the pattern has none', () => {
    expect(allowed('http://10.1.2.3:8080/cb', 'http://10.0.0.0/8:8080/cb')).toBe(true);
    expect(allowed('http://10.1.2.3:8081/cb', 'http://10.0.0.0/8:8080/cb')).toBe(false);
    expect(allowed('http://10.1.2.3/cb', 'http://10.0.0.0/8/cb')).toBe(true);
    expect(allowed('http://10.1.2.3:8080/cb', 'http://10.0.0.0/8/cb')).toBe(false);
  });

  it('matches IPv6 ranges', () => {
    expect(allowed('http://[fd12::5]:4000/cb', 'http://[fd00::/8]:*/cb')).toBe(true);
    expect(allowed('http://[2001:db8::1]:4000/cb', 'http://[fd00::/8]:*/cb')).toBe(false);
    expect(allowed('http://[::ffff:c0a8:1]:4000/cb', 'http://192.168.0.0/16:*/cb')).toBe(false);
  });
});

describe('user information in a redirect address', () => {
  const NATIVE = 'http://127.0.0.0/8:*/native';
  const WITH_USER = ['http://evil.example@127.0.0.1:9999/native', 'http://user:pw@127.0.0.1:9999/native', 'http://@127.0.0.1:9999/native', 'http://evil.example:@127.0.0.1:9999/native'];

  /** A standard authorization request of a client registered with `patterns`, as /sso/authorize reads it. */
  const standardRequest = (redirectUri: string, patterns: string[]) =>
    readAuthorizationRequest(
      { response_type: 'code', client_id: 'native', redirect_uri: redirectUri, code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' },
      {
        findClient: async () => ({ id: 'native', name: 'Native app', enabled: true, grants: ['authorization_code'], redirectPatterns: patterns, scopes: [] }) as unknown as ClientEntity,
        readIdTokenHint: async () => undefined,
      },
      'https://connect.example.com',
    );

  it.each(WITH_USER)('is refused by the one parser, so no matcher sees it: %s', (url) => {
    expect(() => parseRedirectUrl(url)).toThrow(/user information/);
    expect(readRedirectUrl(url)).toBeUndefined();
    expect(() => parseRedirectPattern(url)).toThrow(/user information/);
  });

  it.each(WITH_USER)('is refused wherever a redirect address comes in: a standard request’s redirect_uri against a loopback range, a post-logout redirect: %s', async (url) => {
    expect(await standardRequest(url, [NATIVE])).toEqual({ kind: 'page', message: "The request's redirect_uri is not one registered for Native app." });
    expect(isPostLogoutRedirectRegistered(url, ['http://127.0.0.1:9999/native'])).toBe(false);
  });

  it('leaves the same address without it to the client that registered it', async () => {
    const url = 'http://127.0.0.1:9999/native';
    expect(isAppRedirectAllowed(parseRedirectUrl(url), [NATIVE])).toBe(true);
    expect(isRedirectAllowed(parseRedirectUrl(url), [NATIVE])).toBe(true);
    expect(await standardRequest(url, [NATIVE])).toMatchObject({ kind: 'request', request: { redirectUri: url } });
    expect(isPostLogoutRedirectRegistered(url, [url])).toBe(true);
  });
});
