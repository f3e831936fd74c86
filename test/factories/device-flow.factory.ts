import type { TestApp } from '../setup/test-app.js';
import type { TestClient } from './oauth.factory.js';
import { credentials, type FormResponse, type PortalUser, postForm } from './token-flow.factory.js';

/** RFC 8628 §3.4. */
export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** RFC 8628 §3.2. */
export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

export function requestDeviceAuthorization(app: TestApp, client: TestClient, extra: Record<string, string> = {}) {
  return postForm<DeviceAuthorization>(app, '/sso/device_authorization', { ...credentials(client), ...extra });
}

/** A started device authorization (throws unless 200). */
export async function startDeviceAuthorization(app: TestApp, client: TestClient, extra: Record<string, string> = {}): Promise<DeviceAuthorization> {
  const response = await requestDeviceAuthorization(app, client, extra);
  if (response.status !== 200) throw new Error(`device authorization answered ${response.status}: ${response.text}`);
  return response.body;
}

/** One poll of the device grant at /sso/token. */
export function pollDeviceToken(app: TestApp, client: TestClient, deviceCode: string): Promise<FormResponse> {
  return postForm(app, '/sso/token', { grant_type: DEVICE_GRANT, device_code: deviceCode, ...credentials(client) });
}

const unescapeHtml = (text: string) =>
  text.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');

/**
 * The verification page driven with fetch, as a browser without JavaScript would: it keeps its
 * cookies (the CSRF cookie, and the session cookie a sign-in sets) and sends each form's hidden
 * fields with what the user enters.
 */
export class VerificationPage {
  status = 0;
  html = '';
  headers = new Headers();
  /** The browser's cookies, by name. */
  readonly cookies = new Map<string, string>();

  private constructor(
    private readonly baseUrl: string,
    /** Sent with every request, e.g. X-Forwarded-For to act from another address behind a trusted proxy. */
    private readonly extraHeaders: Record<string, string>,
  ) {}

  /** A new tab; with `cookies`, of a browser that already has them (another page's `cookies`). */
  static async open(app: TestApp, query = '', headers: Record<string, string> = {}, cookies: ReadonlyMap<string, string> = new Map()): Promise<VerificationPage> {
    const page = new VerificationPage(app.baseUrl, headers);
    for (const [name, value] of cookies) page.cookies.set(name, value);
    await page.load(await fetch(`${app.baseUrl}/sso/device${query}`, { headers: { ...headers, cookie: page.cookieHeader() } }));
    return page;
  }

  /** The hidden fields of the current form. */
  get hidden(): Record<string, string> {
    return Object.fromEntries([...this.html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, name, value]) => [name, unescapeHtml(value)]));
  }

  /** What the code input holds (pre-filled, or kept after an error). */
  get typedCode(): string | undefined {
    const value = /<input id="user_code" [^>]*value="([^"]*)"/.exec(this.html)?.[1];
    return value === undefined ? undefined : unescapeHtml(value);
  }

  /** The text of the page's error message, if it shows one. */
  get error(): string | undefined {
    const text = /<p class="error" role="alert"[^>]*>([^<]*)<\/p>/.exec(this.html)?.[1];
    return text === undefined ? undefined : unescapeHtml(text);
  }

  /** Submits the current form with its hidden fields and `fields` (which win). */
  async submit(fields: Record<string, string>): Promise<this> {
    await this.load(
      await fetch(`${this.baseUrl}/sso/device`, {
        method: 'POST',
        headers: { ...this.extraHeaders, 'content-type': 'application/x-www-form-urlencoded', cookie: this.cookieHeader() },
        body: new URLSearchParams({ ...this.hidden, ...fields }),
      }),
    );
    return this;
  }

  private cookieHeader() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  private async load(response: Response) {
    this.status = response.status;
    this.headers = response.headers;
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    this.html = await response.text();
  }
}

/** The whole verification page for one user code: enter it, sign in, decide. Returns the last page. */
export async function verifyDevice(app: TestApp, userCode: string, user: PortalUser, decision: 'approve' | 'deny' = 'approve', headers: Record<string, string> = {}) {
  const page = await VerificationPage.open(app, '', headers);
  await page.submit({ user_code: userCode });
  if (page.status !== 200) throw new Error(`code entry answered ${page.status}: ${page.error}`);
  await page.submit({ username: user.username, password: user.password });
  if (page.status !== 200) throw new Error(`sign-in answered ${page.status}: ${page.error}`);
  return page.submit({ decision });
}
