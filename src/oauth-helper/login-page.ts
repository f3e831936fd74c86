import { createHash } from 'node:crypto';

// Server-rendered pages of /sso/authorize: no JavaScript, one inline style block allowed by its
// hash in the Content-Security-Policy, readable from a phone to a desktop.

const STYLE = `
:root { color-scheme: light dark; --accent: #0b5cad; --error: #b00020; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; display: grid; place-items: center; min-height: 100vh; padding: 1rem; }
main { width: 100%; max-width: 24rem; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
p { margin: 0 0 1rem; }
label { display: block; font-weight: 600; margin: 1rem 0 .25rem; }
input { width: 100%; font: inherit; padding: .65rem .75rem; border: 1px solid #8a8a8a; border-radius: .375rem; }
input:focus, button:focus { outline: 3px solid var(--accent); outline-offset: 2px; }
button { width: 100%; margin-top: 1.5rem; font: inherit; font-weight: 600; padding: .75rem; border: 0; border-radius: .375rem; background: var(--accent); color: #fff; cursor: pointer; }
.error { color: var(--error); border-left: 4px solid var(--error); padding-left: .75rem; }
@media (prefers-color-scheme: dark) { :root { --accent: #5ea8ff; --error: #ff8a80; } button { color: #000; } }
`;

export const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

export interface LoginForm {
  clientName: string;
  clientId: string;
  state: string;
  csrfToken: string;
  username?: string;
  error?: string;
  /** Where the code goes after sign-in (the redirect's host), named so the user can tell whether it is their device (RFC 9700 §4.2). */
  deviceHost?: string;
}

export function loginPage(form: LoginForm): string {
  const error = form.error ? `<p class="error" role="alert" id="login-error">${escapeHtml(form.error)}</p>` : '';
  const describedBy = form.error ? ' aria-describedby="login-error"' : '';
  return layout(
    'Sign in',
    `<h1>Sign in</h1>
<p>to continue to <strong>${escapeHtml(form.clientName)}</strong></p>
${form.deviceHost ? `<p>Your sign-in is sent to the device at <strong>${escapeHtml(form.deviceHost)}</strong>. Continue only if that is yours.</p>\n` : ''}${error}
<form method="post" action="/sso/authorize" novalidate>
<input type="hidden" name="response_type" value="code">
<input type="hidden" name="client_id" value="${escapeHtml(form.clientId)}">
<input type="hidden" name="state" value="${escapeHtml(form.state)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(form.csrfToken)}">
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required value="${escapeHtml(form.username ?? '')}"${describedBy}${form.username ? '' : ' autofocus'}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${describedBy}${form.username ? ' autofocus' : ''}>
<button type="submit">Sign in</button>
</form>`,
  );
}

export function messagePage(title: string, message: string): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>`);
}
