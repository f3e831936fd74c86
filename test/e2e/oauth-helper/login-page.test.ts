import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState, signWithServiceKey, stateClaims } from '../../factories/state.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const DEVICE_URL = 'https://device.example.test/callback';
const LAN_URL = 'http://192.168.17.4:8080/cb';
const ERROR_TITLE = 'This sign-in link does not work';

/** A login page as the browser got it, with what it needs to post the form back. */
interface LoginPage {
  response: Response;
  html: string;
  /** `vc_csrf=<value>` from Set-Cookie, ready for a Cookie header. */
  cookie: string;
  csrfToken: string;
}

/** The value of the form field `name` (hidden inputs and the username). */
const field = (html: string, name: string) => {
  const match = new RegExp(`<input[^>]*name="${name}"[^>]*value="([^"]*)"`).exec(html);
  return match && match[1].replaceAll('&amp;', '&');
};

const csrfCookieValue = (response: Response) => /^vc_csrf=([^;]*)/.exec(response.headers.get('set-cookie') ?? '')?.[1];

async function openPage(url: string): Promise<LoginPage> {
  const response = await fetch(url, { redirect: 'manual' });
  const html = await response.text();
  return { response, html, cookie: `vc_csrf=${csrfCookieValue(response)}`, csrfToken: field(html, 'csrf_token') ?? '' };
}

/** Posts the login form of `page`; `fields` replace or (with undefined) remove the page's own values. */
function submit(app: TestApp, page: { html: string; cookie?: string }, fields: Record<string, string | undefined>) {
  const form: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: field(page.html, 'client_id') ?? undefined,
    state: field(page.html, 'state') ?? undefined,
    csrf_token: field(page.html, 'csrf_token') ?? undefined,
    ...fields,
  };
  const body = new URLSearchParams(Object.entries(form).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return fetch(`${app.baseUrl}/sso/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(page.cookie ? { cookie: page.cookie } : {}) },
    body,
  });
}

/** The page answering a form post, ready to be posted again. */
async function nextPage(response: Response) {
  return { html: await response.text(), cookie: `vc_csrf=${csrfCookieValue(response)}` };
}

const pollStatus = async (codeUrl: string) => (await fetch(codeUrl)).status;

describe('/sso/authorize login page', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    client = await createClient(app, { redirectPatterns: [DEVICE_URL, 'http://192.168.0.0/16:*/cb'] });
  });
  afterAll(() => app.close());

  const authorizeUrl = (params: Record<string, string>) => `${app.baseUrl}/sso/authorize?${new URLSearchParams(params)}`;

  describe('GET', () => {
    it('serves an HTML form with username and password inputs, one submit button and a hidden CSRF token', async () => {
      const { authorize_url, state } = await issueState(app, client.id);
      const { response, html, csrfToken } = await openPage(authorize_url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(html.match(/<form /g)).toHaveLength(1);
      expect(html).toContain('<form method="post" action="/sso/authorize"');
      expect(html.match(/<input[^>]*name="username"[^>]*>/g)).toEqual([expect.stringContaining('type="text"')]);
      expect(html.match(/<input[^>]*name="password"[^>]*>/g)).toEqual([expect.stringContaining('type="password"')]);
      expect(html.match(/<input[^>]*name="password"[^>]*>/)![0]).not.toContain('value=');
      expect(html.match(/type="submit"/g)).toHaveLength(1);
      expect(html).toContain('<button type="submit">');
      expect(html).toMatch(/<input type="hidden" name="csrf_token" value="[A-Za-z0-9_-]{43}">/);
      expect(csrfToken).toBe(csrfCookieValue(response));
      expect(field(html, 'state')).toBe(state);
      expect(field(html, 'client_id')).toBe(client.id);
    });

    it('sets the CSRF cookie HttpOnly and SameSite=Strict, scoped to /sso/authorize', async () => {
      const { response } = await openPage((await issueState(app, client.id)).authorize_url);
      const cookie = response.headers.get('set-cookie')!;
      const [pair, ...attributes] = cookie.split(/;\s*/);
      expect(pair).toMatch(/^vc_csrf=[A-Za-z0-9_-]{43}$/);
      expect(attributes.sort()).toEqual(['HttpOnly', 'Path=/sso/authorize', 'SameSite=Strict']);
    });

    it('gives every fresh visitor a different CSRF token', async () => {
      const { authorize_url } = await issueState(app, client.id);
      const [first, second] = [await openPage(authorize_url), await openPage(authorize_url)];
      expect(first.csrfToken).not.toBe(second.csrfToken);
    });

    it('sends no-referrer, no-store, a CSP forbidding framing and all but its own style, and X-Frame-Options DENY', async () => {
      const { response } = await openPage((await issueState(app, client.id)).authorize_url);
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      const csp = response.headers.get('content-security-policy')!.split(/;\s*/);
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("form-action 'self'");
      expect(csp).toEqual(expect.arrayContaining([expect.stringMatching(/^style-src 'sha256-[A-Za-z0-9+/]+=*'$/)]));
    });

    it('allows the device origin as a form-action when the state carries a redirect_url', async () => {
      for (const [redirectUrl, origin] of [
        [DEVICE_URL, 'https://device.example.test'],
        [LAN_URL, 'http://192.168.17.4:8080'],
      ]) {
        const { response } = await openPage((await issueState(app, client.id, { redirect_url: redirectUrl })).authorize_url);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-security-policy')!.split(/;\s*/)).toContain(`form-action 'self' ${origin}`);
      }
    });

    it('names the client asking, and the host the sign-in goes to when there is one', async () => {
      const named = await app.get(ClientsService).create({ name: 'Bridge display', redirectPatterns: ['http://192.168.0.0/16:*/cb'] });
      const toDevice = await openPage((await issueState(app, named.client_id, { redirect_url: LAN_URL })).authorize_url);
      expect(toDevice.html).toContain('<p>Use your voyage-planning portal account to continue to <strong>Bridge display</strong>.</p>');
      expect(toDevice.html).toContain('sent to the device at <strong>192.168.17.4:8080</strong>');
      const polled = await openPage((await issueState(app, named.client_id)).authorize_url);
      expect(polled.html).toContain('<p>Use your voyage-planning portal account to continue to <strong>Bridge display</strong>.</p>');
      expect(polled.html).not.toContain('sent to the device at');
    });

    it('HTML-escapes the client name', async () => {
      const created = await app.get(ClientsService).create({ name: '<script>alert(1)</script>' });
      const { response, html } = await openPage((await issueState(app, created.client_id)).authorize_url);
      expect(response.status).toBe(200);
      expect(html).toContain('<strong>&lt;script&gt;alert(1)&lt;/script&gt;</strong>');
      expect(html).not.toContain('<script>');
    });

    describe('a sign-in link that does not work', () => {
      /** An error page, titled and worded for its cause. */
      const expectErrorPage = async (response: Response, message: string, title = ERROR_TITLE) => {
        expect(response.status).toBe(400);
        expect(response.headers.get('location')).toBeNull();
        expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
        expect(response.headers.get('cache-control')).toBe('no-store');
        const html = await response.text();
        expect(html).toContain(`<h1>${title}</h1>\n<p>${message}</p>`);
        expect(html).not.toContain('<form');
      };
      const CHANGED = 'The link is incomplete or was changed. Start the sign-in again from your device.';

      // Every state here carries a redirect_url, so an OAuth-style "redirect the error" would show.
      it('answers 400 with an HTML page and no redirect for a state that is not a JWT', async () => {
        await expectErrorPage(await fetch(authorizeUrl({ response_type: 'code', client_id: client.id, state: 'garbage' }), { redirect: 'manual' }), CHANGED);
      });

      it('answers 400 with an HTML page and no redirect without a state', async () => {
        await expectErrorPage(await fetch(authorizeUrl({ response_type: 'code', client_id: client.id }), { redirect: 'manual' }), CHANGED);
      });

      it('answers 400 with an HTML page and no redirect for an unknown client', async () => {
        const { state } = await issueState(app, client.id, { redirect_url: DEVICE_URL });
        await expectErrorPage(
          await fetch(authorizeUrl({ response_type: 'code', client_id: 'no-such-client', state }), { redirect: 'manual' }),
          'The link is for an application that is not registered here. Check the address, or ask the maker of your device.',
        );
      });

      it('answers 400 with an HTML page and no redirect for a disabled client', async () => {
        const disabled = await createClient(app, { redirectPatterns: [DEVICE_URL] });
        const { authorize_url } = await issueState(app, disabled.id, { redirect_url: DEVICE_URL });
        await app.get(ClientsService).setEnabled(disabled.id, false);
        const { name } = await app.get(ClientsService).show(disabled.id);
        await expectErrorPage(await fetch(authorize_url, { redirect: 'manual' }), `${name} has been disabled by an administrator, so it cannot sign in.`);
      });

      it('answers 400 with an HTML page and no redirect for a response_type other than code', async () => {
        const { state } = await issueState(app, client.id, { redirect_url: DEVICE_URL });
        const unsupported = 'The link asks for an unsupported response type. Start the sign-in again from your device.';
        await expectErrorPage(await fetch(authorizeUrl({ response_type: 'token', client_id: client.id, state }), { redirect: 'manual' }), unsupported);
        await expectErrorPage(await fetch(authorizeUrl({ client_id: client.id, state }), { redirect: 'manual' }), unsupported);
      });

      it('answers 400 with an HTML page and no redirect for a state of another client', async () => {
        const other = await createClient(app, { redirectPatterns: [DEVICE_URL] });
        const { state } = await issueState(app, other.id, { redirect_url: DEVICE_URL });
        await expectErrorPage(await fetch(authorizeUrl({ response_type: 'code', client_id: client.id, state }), { redirect: 'manual' }), CHANGED);
      });

      it('answers 400 with an HTML page and no redirect for an expired state', async () => {
        const { state } = await issueState(app, client.id, { redirect_url: DEVICE_URL });
        const now = Math.floor(Date.now() / 1000);
        const expired = await signWithServiceKey(app, { ...stateClaims(state), iat: now - 1200, exp: now - 600 });
        // The same claims, still valid, pass: only the expiry differs.
        expect((await fetch(authorizeUrl({ response_type: 'code', client_id: client.id, state: await signWithServiceKey(app, stateClaims(state)) }))).status).toBe(200);
        await expectErrorPage(
          await fetch(authorizeUrl({ response_type: 'code', client_id: client.id, state: expired }), { redirect: 'manual' }),
          'Sign-in links work for a few minutes only. Start the sign-in again from your device.',
          'This sign-in link has expired',
        );
      });

      it('answers 400 with an HTML page and no redirect for a repeated parameter', async () => {
        const { state } = await issueState(app, client.id, { redirect_url: DEVICE_URL });
        const url = `${authorizeUrl({ response_type: 'code', client_id: client.id, state })}&state=${state}`;
        await expectErrorPage(await fetch(url, { redirect: 'manual' }), 'The link is malformed: a parameter is repeated or holds a character it cannot. Start the sign-in again from your device.');
      });

      it('answers a form post with an invalid state with 400, an HTML page and no redirect', async () => {
        const page = await openPage((await issueState(app, client.id, { redirect_url: DEVICE_URL })).authorize_url);
        const user = await createUser(app);
        await expectErrorPage(await submit(app, page, { ...user, state: 'garbage' }), CHANGED);
      });

      it('answers 400 with an HTML page and no redirect for a state already used to sign in', async () => {
        const { authorize_url } = await issueState(app, client.id, { redirect_url: DEVICE_URL });
        expect((await signIn(authorize_url, await createUser(app))).status).toBe(302);
        await expectErrorPage(
          await fetch(authorize_url, { redirect: 'manual' }),
          'This link has already been used to sign in. If your device is not signed in, start the sign-in again from your device.',
          'This sign-in link was already used',
        );
      });
    });
  });

  describe('POST', () => {
    it('shows the form again with "Wrong username or password", the username kept and a fresh CSRF token', async () => {
      const user = await createUser(app);
      const { authorize_url, code_url } = await issueState(app, client.id);
      const page = await openPage(authorize_url);
      const response = await submit(app, page, { username: user.username, password: 'not the password' });
      expect(response.status).toBe(200);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await response.text();
      expect(html).toContain('<p class="error" role="alert" id="login-error">Wrong username or password.</p>');
      expect(field(html, 'username')).toBe(user.username);
      expect(html).not.toContain('not the password');
      const fresh = field(html, 'csrf_token');
      expect(fresh).not.toBe(page.csrfToken);
      expect(csrfCookieValue(response)).toBe(fresh);
      expect(await pollStatus(code_url)).toBe(404);
    });

    const STALE = 'This form is out of date: the page was used in another tab since. Please sign in again.';
    it.each([
      ['the csrf_token field is missing', (page: LoginPage) => ({ page, fields: { csrf_token: undefined } }), STALE],
      ['the csrf_token field differs from the cookie', (page: LoginPage) => ({ page, fields: { csrf_token: `${page.csrfToken.slice(1)}A` } }), STALE],
      ['the cookie is missing', (page: LoginPage) => ({ page: { html: page.html }, fields: {} }), "Your browser did not send this page&#39;s cookie: allow cookies for this site. Please sign in again."],
    ])('answers 403 with a fresh form, saying why, and signs nobody in when %s', async (_name, variant, message) => {
      const user = await createUser(app);
      const { authorize_url, code_url, state } = await issueState(app, client.id);
      const page = await openPage(authorize_url);
      const attempt = variant(page);
      const response = await submit(app, attempt.page, { ...attempt.fields, username: user.username, password: user.password });
      expect(response.status).toBe(403);
      expect(response.headers.get('location')).toBeNull();
      const html = await response.text();
      expect(html).toContain(`<p class="error" role="alert" id="login-error">${message}</p>`);
      const fresh = field(html, 'csrf_token')!;
      expect(fresh).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(fresh).not.toBe(page.csrfToken);
      expect(csrfCookieValue(response)).toBe(fresh);

      expect(await pollStatus(code_url)).toBe(404);
      expect(await query(app.databaseUrl, 'SELECT 1 FROM authorizations WHERE state_id = $1', [stateClaims(state).jti])).toEqual([]);

      // The fresh form works.
      const retry = await submit(app, { html, cookie: `vc_csrf=${fresh}` }, { username: user.username, password: user.password });
      expect(retry.status).toBe(200);
      expect(await pollStatus(code_url)).toBe(200);
    });

    it('refuses to redirect to a device URL whose pattern was removed after the state was issued', async () => {
      const narrowed = await createClient(app, { redirectPatterns: [DEVICE_URL, 'http://192.168.0.0/16:*/cb'] });
      const user = await createUser(app);
      const { authorize_url } = await issueState(app, narrowed.id, { redirect_url: LAN_URL });
      const page = await openPage(authorize_url);
      // As every change of a client does, tell the instances (they cache client records).
      await query(app.databaseUrl, 'UPDATE clients SET redirect_patterns = $2 WHERE id = $1', [narrowed.id, [DEVICE_URL]]);
      await query(app.databaseUrl, "SELECT pg_notify('vc_client_changed', $1)", [narrowed.id]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const response = await submit(app, page, { username: user.username, password: user.password });
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect(await response.text()).toContain('The device address is no longer allowed for this application.');
    });

    it('redirects to the device URL with code, the issued state and the issuer (RFC 9207) appended when the state carries a redirect_url', async () => {
      const user = await createUser(app);
      for (const redirectUrl of [DEVICE_URL, LAN_URL]) {
        const { authorize_url, code_url, state } = await issueState(app, client.id, { redirect_url: redirectUrl });
        const response = await submit(app, await openPage(authorize_url), user);
        expect(response.status).toBe(302);
        expect(response.headers.get('cache-control')).toBe('no-store');
        expect(response.headers.get('referrer-policy')).toBe('no-referrer');
        const location = new URL(response.headers.get('location')!);
        expect(`${location.origin}${location.pathname}`).toBe(redirectUrl);
        expect([...location.searchParams.keys()]).toEqual(['code', 'state', 'iss']);
        expect(location.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
        expect(location.searchParams.get('state')).toBe(state);
        expect(location.searchParams.get('iss')).toBe(app.baseUrl);
        // The code went with the browser; the poll endpoint has nothing for this state.
        expect(await pollStatus(code_url)).toBe(404);
      }
    });

    it('tells the user to return to the device when the state has no redirect_url, and the code waits at the poll endpoint', async () => {
      const user = await createUser(app);
      const { authorize_url, code_url } = await issueState(app, client.id);
      expect(await pollStatus(code_url)).toBe(404);
      const response = await submit(app, await openPage(authorize_url), user);
      expect(response.status).toBe(200);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await response.text();
      expect(html).toContain('Return to your device');
      expect(html).not.toContain('<form');
      const picked = await fetch(code_url);
      expect(picked.status).toBe(200);
      expect(await picked.json()).toEqual({ code: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    });

    it.each([
      ['with', { redirect_url: DEVICE_URL }],
      ['without', {}],
    ])('answers a second sign-in with the same state (%s redirect_url) with the 400 page and no code', async (_name, binding) => {
      const user = await createUser(app);
      const { authorize_url } = await issueState(app, client.id, binding);
      const page = await openPage(authorize_url);
      const first = await submit(app, page, user);
      expect([200, 302]).toContain(first.status);
      const second = await submit(app, page, user);
      expect(second.status).toBe(400);
      expect(second.headers.get('location')).toBeNull();
      expect(await second.text()).toContain('<h1>This sign-in link was already used</h1>');
    });

    it('gives one code when the same form is posted twice at once', async () => {
      const user = await createUser(app);
      const page = await openPage((await issueState(app, client.id, { redirect_url: DEVICE_URL })).authorize_url);
      const responses = await Promise.all(Array.from({ length: 4 }, () => submit(app, page, user)));
      expect(responses.map((response) => response.status).sort()).toEqual([302, 400, 400, 400]);
      expect(responses.filter((response) => response.headers.get('location') !== null)).toHaveLength(1);
    });

    it('HTML-escapes the username it shows again', async () => {
      const page = await openPage((await issueState(app, client.id)).authorize_url);
      const response = await submit(app, page, { username: '"><script>alert(1)</script>', password: 'wrong password' });
      expect(response.status).toBe(200);
      const html = await response.text();
      expect(html).toContain('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
      expect(html).not.toContain('<script>');
    });

    it('accepts the username in any letter case', async () => {
      const user = await createUser(app, `Case-User-${process.pid}`, 'case password 1');
      const { authorize_url } = await issueState(app, client.id, { redirect_url: DEVICE_URL });
      const response = await submit(app, await openPage(authorize_url), { username: user.username.toUpperCase(), password: user.password });
      expect(response.status).toBe(302);
      expect(new URL(response.headers.get('location')!).searchParams.get('code')).toBeTruthy();
    });

    it('never writes the password, the code, the state or the CSRF token to the logs', async () => {
      const user = await createUser(app, `logged-${process.pid}`, 'l0g-s3cret-password-value');
      const secrets: string[] = [user.password, 'wr0ng-s3cret-password-value'];

      const redirected = await issueState(app, client.id, { redirect_url: DEVICE_URL });
      secrets.push(redirected.state);
      const page = await openPage(redirected.authorize_url);
      secrets.push(page.csrfToken);
      const wrong = await submit(app, page, { username: user.username, password: 'wr0ng-s3cret-password-value' });
      const retryPage = { html: await wrong.text(), cookie: `vc_csrf=${csrfCookieValue(wrong)}` };
      secrets.push(csrfCookieValue(wrong)!);
      const response = await submit(app, retryPage, user);
      expect(response.status).toBe(302);
      secrets.push(new URL(response.headers.get('location')!).searchParams.get('code')!);

      const polled = await issueState(app, client.id);
      secrets.push(polled.state);
      expect((await signIn(polled.authorize_url, user)).status).toBe(200);
      const picked = await fetch(polled.code_url);
      secrets.push(((await picked.json()) as { code: string }).code);

      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(app.logs.length).toBeGreaterThan(0);
      const everything = JSON.stringify(app.logs);
      for (const secret of secrets) {
        expect(secret.length).toBeGreaterThan(10);
        expect(everything).not.toContain(secret);
      }
    });
  });
});

// Its own app: every request comes from 127.0.0.1, whose failures count against one address limit.
describe('/sso/authorize slowing down failed sign-ins', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    // Enough password-check slots that parallel attempts meet the slow-down, not the busy answer.
    app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0', PASSWORD_CHECK_CONCURRENCY: '16' });
    client = await createClient(app);
  });
  afterAll(() => app.close());

  it('answers 429 "Too many failed attempts" with Retry-After after 5 wrong passwords for a username from one address, whatever its case, even to the right password', async () => {
    const user = await createUser(app, `throttled-${process.pid}`, 'throttled password');
    const { authorize_url, code_url } = await issueState(app, client.id);
    let page: { html: string; cookie: string } = await openPage(authorize_url);
    for (const username of [user.username, user.username.toUpperCase(), user.username, `Throttled-${process.pid}`, user.username]) {
      const wrong = await submit(app, page, { username, password: 'wrong password' });
      expect(wrong.status).toBe(200);
      page = await nextPage(wrong);
      expect(page.html).toContain('Wrong username or password.');
    }
    const throttled = await submit(app, page, user);
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(throttled.headers.get('location')).toBeNull();
    expect(throttled.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const retryPage = await nextPage(throttled);
    const wait = /Too many failed attempts\. Try again in (\d+) seconds?\./.exec(retryPage.html);
    expect(wait).not.toBeNull();
    expect(field(retryPage.html, 'username')).toBe(user.username);
    expect(await pollStatus(code_url)).toBe(404);

    // The slowdown ends: after the wait the right password signs in.
    await new Promise((resolve) => setTimeout(resolve, Number(wait![1]) * 1000 + 100));
    expect((await submit(app, retryPage, user)).status).toBe(200);
    expect(await pollStatus(code_url)).toBe(200);
  });

  it('checks no more than 5 passwords of a username when wrong attempts arrive all at once', async () => {
    const user = await createUser(app, `parallel-${process.pid}`, 'parallel password');
    const page = await openPage((await issueState(app, client.id)).authorize_url);
    const responses = await Promise.all(Array.from({ length: 12 }, () => submit(app, page, { username: user.username, password: 'wrong password' })));
    const outcomes = await Promise.all(
      responses.map(async (response) => {
        const html = await response.text();
        if (html.includes('Wrong username or password.')) return `${response.status} wrong`;
        if (html.includes('Too many failed attempts.')) return `${response.status} throttled`;
        return `${response.status} other`;
      }),
    );
    expect(outcomes.sort()).toEqual([...Array(5).fill('200 wrong'), ...Array(7).fill('429 throttled')]);
  });

  it('never slows down successful sign-ins, however many come from one address', async () => {
    for (let i = 0; i < 22; i++) {
      const { authorize_url } = await issueState(app, client.id);
      expect((await signIn(authorize_url, await createUser(app))).status).toBe(200);
    }
  });
});
