/** A browser without JavaScript: its cookies, kept across requests. */
export class FormBrowser {
  private readonly cookies = new Map<string, string>();

  async get(url: string): Promise<Response> {
    return this.keep(await fetch(url, { redirect: 'manual', headers: { cookie: this.cookieHeader() } }));
  }

  async post(url: string, fields: Record<string, string>): Promise<Response> {
    return this.keep(await fetch(url, { method: 'POST', redirect: 'manual', headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) }));
  }

  /** The page's form fields (hidden inputs) with `extra`, posted to `path` (the login page's by default). */
  async submit(page: Response, baseUrl: string, extra: Record<string, string>, path = '/sso/authorize'): Promise<Response> {
    const html = await page.text();
    const fields = Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, name, value]) => [name, value.replaceAll('&amp;', '&')]));
    return this.post(`${baseUrl}${path}`, { ...fields, ...extra });
  }

  has(name: string) {
    return this.cookies.has(name);
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  private cookieHeader() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  private keep(response: Response): Response {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }
}
