/** Drives the login page with fetch, as a browser without JavaScript would: cookie, hidden fields, form post. */
export async function signIn(
  authorizeUrl: string,
  user: { username: string; password: string },
  /** Sent with both requests, e.g. X-Forwarded-For to sign in from another address behind a trusted proxy. */
  headers: Record<string, string> = {},
): Promise<Response> {
  const page = await fetch(authorizeUrl, { headers });
  if (page.status !== 200) throw new Error(`login page answered ${page.status}`);
  const cookie = page.headers.get('set-cookie')!.split(';')[0];
  const html = await page.text();
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1];
  return fetch(new URL('/sso/authorize', authorizeUrl), {
    method: 'POST',
    redirect: 'manual',
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams({
      response_type: 'code',
      client_id: field('client_id'),
      state: field('state').replaceAll('&amp;', '&'),
      csrf_token: field('csrf_token'),
      username: user.username,
      password: user.password,
    }),
  });
}
