import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RequestDeadlineError } from '../../../src/common/errors/temporarily-unavailable.js';
import { DeviceVerificationService } from '../../../src/device-flow/device-verification.service.js';
import { UpstreamCallbackService } from '../../../src/upstream-callback/upstream-callback.service.js';
import { LoginService } from '../../../src/oauth-helper/login.service.js';
import { LogoutService } from '../../../src/oidc/logout.service.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';
import { launchChromium } from '../../setup/chromium.js';

/** What a browser sends when the address bar asks for a page. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('a wrong method, a wrong media type and a mistyped address', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** Every page route, by the service method its handler calls: each is made to fail in turn. */
  const PAGE_ROUTES = [
    { method: 'GET', path: '/sso/authorize?response_type=code&client_id=x&state=y', service: LoginService, call: 'show' },
    { method: 'POST', path: '/sso/authorize', service: LoginService, call: 'submit' },
    { method: 'GET', path: '/sso/device', service: DeviceVerificationService, call: 'show' },
    { method: 'POST', path: '/sso/device', service: DeviceVerificationService, call: 'submit' },
    { method: 'GET', path: '/sso/logout', service: LogoutService, call: 'answer' },
    { method: 'POST', path: '/sso/logout', service: LogoutService, call: 'answer' },
    { method: 'GET', path: '/sso/logout/done', service: LogoutService, call: 'afterProvider' },
    { method: 'GET', path: '/sso/callback/corp?code=c&state=s', service: UpstreamCallbackService, call: 'answer' },
  ] as const;

  const request = (route: (typeof PAGE_ROUTES)[number]) =>
    fetch(`${app.baseUrl}${route.path}`, {
      method: route.method,
      redirect: 'manual',
      ...(route.method === 'POST' ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'user_code=BCDF-GHJK' } : {}),
    });

  it('answers an unexpected failure on every page route with the HTML error page, never JSON or a stack, and logs the details', async () => {
    for (const route of PAGE_ROUTES) {
      const where = `${route.method} ${route.path}`;
      vi.spyOn(app.get<object>(route.service as never) as Record<string, () => unknown>, route.call).mockRejectedValue(new TypeError('secret-detail: cannot read properties of undefined'));
      const response = await request(route);
      expect(response.status, where).toBe(500);
      expect(response.headers.get('content-type'), where).toBe('text/html; charset=utf-8');
      expect(response.headers.get('cache-control'), where).toBe('no-store');
      expect(response.headers.get('content-security-policy'), where).toContain("default-src 'none'");
      const html = await response.text();
      expect(html, where).toContain('<h1>Something went wrong</h1>');
      expect(html, where).toContain(response.headers.get('x-request-id')!);
      expect(html, where).not.toMatch(/secret-detail|TypeError|correlationId|\bat \S+ \(/);
      const logged = app.logs.find((line) => line.reqId === response.headers.get('x-request-id') && line.level === 'error');
      expect(JSON.stringify(logged), where).toContain('secret-detail');
      vi.restoreAllMocks();
    }
  });

  it('answers a page past its deadline or without its database with the 503 page and Retry-After, and a body it cannot read with an HTML 4xx', async () => {
    for (const route of PAGE_ROUTES) {
      const where = `${route.method} ${route.path}`;
      vi.spyOn(app.get<object>(route.service as never) as Record<string, () => unknown>, route.call).mockRejectedValue(new RequestDeadlineError(5000));
      const response = await request(route);
      expect(response.status, where).toBe(503);
      expect(response.headers.get('retry-after'), where).toBe('1');
      expect(response.headers.get('content-type'), where).toBe('text/html; charset=utf-8');
      expect(await response.text(), where).toContain('<h1>Try again in a moment</h1>');
      vi.restoreAllMocks();
    }
    for (const path of ['/sso/authorize', '/sso/device', '/sso/logout']) {
      const response = await fetch(`${app.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"username":' });
      expect(response.status, path).toBeGreaterThanOrEqual(400);
      expect(response.status, path).toBeLessThan(500);
      expect(response.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(await response.text(), path).toContain('<h1>This request does not work</h1>');
    }
  });

  it.each([
    ['GET', '/sso/token', 'POST'],
    ['PUT', '/sso/token', 'POST'],
    ['GET', '/sso/device_authorization', 'POST'],
    ['DELETE', '/public/api/oauth2/token', 'POST'],
  ])('answers %s %s with 405, Allow and an RFC 6749 body', async (method, path, allow) => {
    const response = await fetch(`${app.baseUrl}${path}`, { method });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe(allow);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ error: 'invalid_request', error_description: `method not allowed at this endpoint: use ${allow}` });
  });

  it('answers a wrong method on another route with 405, Allow (GET with HEAD) and the service format', async () => {
    const response = await fetch(`${app.baseUrl}/health/live`, { method: 'DELETE' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(await response.json()).toEqual({ message: 'DELETE is not allowed at /health/live: use GET or HEAD', correlationId: response.headers.get('x-request-id') });
  });

  it('names every method a path with parameters has', async () => {
    const response = await fetch(`${app.baseUrl}/external/oauth2helper/config/some-client`, { method: 'PATCH' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });

  it('keeps 404 for an address no method has', async () => {
    const response = await fetch(`${app.baseUrl}/sso/tokens`, { method: 'POST' });
    expect(response.status).toBe(404);
    expect(response.headers.get('allow')).toBeNull();
  });

  it.each([
    ['JSON', 'application/json', '{"grant_type":"client_credentials"}'],
    ['text', 'text/plain', 'grant_type=client_credentials'],
  ])('answers %s sent to an OAuth form route with 415, as documented', async (_kind, contentType, body) => {
    for (const path of ['/sso/token', '/public/api/oauth2/token', '/sso/device_authorization', '/sso/introspect', '/sso/revoke', '/sso/userinfo']) {
      const response = await fetch(`${app.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': contentType }, body });
      expect(response.status, path).toBe(415);
      expect(await response.json(), path).toEqual({ error: 'invalid_request', error_description: 'unsupported content type: send application/x-www-form-urlencoded' });
    }
  });

  it('shows a browser an HTML page for a mistyped address, and keeps JSON for API clients', async () => {
    const page = await fetch(`${app.baseUrl}/sso/devcie?user_code=ABCD-EFGH`, { headers: { accept: BROWSER_ACCEPT } });
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).toContain('<h1>Page not found</h1>');
    expect(html).not.toContain('ABCD-EFGH');
    const api = await fetch(`${app.baseUrl}/sso/devcie`, { headers: { accept: 'application/json' } });
    expect(api.headers.get('content-type')).toContain('application/json');
  });

  it('renders the missing page readably in Chromium', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const response = await page.goto(`${app.baseUrl}/sso/sign-in`);
      expect(response?.status()).toBe(404);
      expect(await page.locator('h1').textContent()).toBe('Page not found');
      expect(await page.locator('main p').first().textContent()).toContain('/sso/sign-in');
    } finally {
      await browser.close();
    }
  });
});
