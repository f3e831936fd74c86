import { createHash } from 'node:crypto';

// The service's server-rendered pages (sign-in, device verification): no JavaScript, one inline
// style block allowed by its hash in the Content-Security-Policy, readable from a phone to a desktop.

const STYLE = `
:root { color-scheme: light dark; --accent: #0b5cad; --error: #b00020; --success: #1e7b34; --muted: #5f6368; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; display: grid; place-items: center; min-height: 100vh; padding: 1rem; }
main { width: 100%; max-width: 24rem; overflow-wrap: break-word; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0 0 .5rem; }
p { margin: 0 0 1rem; }
label { display: block; font-weight: 600; margin: 1rem 0 .25rem; }
input { width: 100%; font: inherit; padding: .65rem .75rem; border: 1px solid #8a8a8a; border-radius: .375rem; }
input:focus, button:focus { outline: 3px solid var(--accent); outline-offset: 2px; }
button { width: 100%; margin-top: 1.5rem; font: inherit; font-weight: 600; padding: .75rem; border: 0; border-radius: .375rem; background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { margin-top: .75rem; background: transparent; color: var(--accent); border: 1px solid var(--accent); }
.error { color: var(--error); border-left: 4px solid var(--error); padding-left: .75rem; }
.notice { border-left: 4px solid var(--success); padding-left: .75rem; }
.code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-weight: 600; letter-spacing: .1em; white-space: nowrap; }
input.code { font-size: 1.5rem; letter-spacing: .15em; text-transform: uppercase; }
p.code { font-size: 1.75rem; text-align: center; padding: .5rem; border: 1px dashed #8a8a8a; border-radius: .375rem; }
.hint { color: var(--muted); font-size: .875rem; margin-top: .25rem; }
.address { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
form.provider button { margin-top: .75rem; background: transparent; color: inherit; border: 1px solid #8a8a8a; }
form.provider button:hover { border-color: var(--accent); }
form.provider + p, form.provider + form:not(.provider) { margin-top: 1.5rem; }
.divider { display: flex; align-items: center; gap: .75rem; color: var(--muted); font-size: .875rem; margin: 1.5rem 0 0; }
.divider::before, .divider::after { content: ""; flex: 1; border-top: 1px solid #c4c4c4; }
ul.scopes { margin: 0 0 1rem; padding-left: 1.25rem; }
ul.scopes li + li { margin-top: .375rem; }
header.portal { display: flex; align-items: center; gap: .625rem; margin: 0 0 1.75rem; padding-bottom: .75rem; border-bottom: 1px solid rgba(127, 127, 127, .35); color: var(--muted); font-weight: 600; }
header.portal img { height: 2rem; width: auto; max-width: 8rem; object-fit: contain; }
a { color: var(--accent); }
a.button { display: block; margin-top: .75rem; padding: .75rem; border: 1px solid var(--accent); border-radius: .375rem; color: var(--accent); font-weight: 600; text-align: center; text-decoration: none; }
a.button:focus { outline: 3px solid var(--accent); outline-offset: 2px; }
a.button + p { margin-top: 1.5rem; }
ul.links { margin: 0 0 1rem; padding-left: 1.25rem; }
ul.links li + li { margin-top: .375rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; padding: .05em .3em; border-radius: .25rem; background: rgba(127, 127, 127, .15); overflow-wrap: anywhere; }
@media (prefers-color-scheme: dark) { :root { --accent: #5ea8ff; --error: #ff8a80; --success: #7bd88f; --muted: #b0b4ba; } button { color: #000; } button.secondary { color: var(--accent); } }
`;

/** Whose pages these are, as the operator names them (PORTAL_NAME, PORTAL_LOGO_FILE); set once at start by setPortal. */
export interface Portal {
  name: string;
  /** The logo's address on this service, when there is one. */
  logoUrl?: string;
}

// Pages are made by plain functions, all over the code: they read the portal from here, not from
// a request. A process serves one portal (tests that start several apps in one process keep the default).
let portal: Portal = { name: 'voyage-planning portal' };

export function setPortal(value: Portal): void {
  portal = value;
}

/** The account users sign in with, in the portal's words ("voyage-planning portal account"). */
export const portalAccount = () => `${portal.name} account`;

export const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

/** A whole page around `body` (already escaped HTML), under the portal's name (and logo). */
export function pageLayout(title: string, body: string): string {
  const logo = portal.logoUrl ? `<img src="${escapeHtml(portal.logoUrl)}" alt="">` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} – ${escapeHtml(portal.name)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<header class="portal">${logo}<span>${escapeHtml(portal.name)}</span></header>
${body}
</main>
</body>
</html>
`;
}

/** A page that only says something: a heading and one paragraph, and a detail in small print when there is one. */
export function messagePage(title: string, message: string, detail?: string): string {
  return pageLayout(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>${detail ? `\n<p class="hint">${escapeHtml(detail)}</p>` : ''}`);
}

/** An error message above a form, announced to screen readers; '' without one. */
export const errorParagraph = (error: string | undefined, id: string) => (error ? `<p class="error" role="alert" id="${id}">${escapeHtml(error)}</p>\n` : '');

/** Good news above a form (nothing is wrong, nothing more to do), announced politely; '' without one. */
export const noticeParagraph = (notice: string | undefined) => (notice ? `<p class="notice" role="status">${escapeHtml(notice)}</p>\n` : '');

/** The username and password inputs of a sign-in form, with the focus where the user types next. */
export function credentialInputs(username: string | undefined, describedById?: string, focus = true): string {
  const describedBy = describedById ? ` aria-describedby="${describedById}"` : '';
  const autofocus = (here: boolean) => (focus && here ? ' autofocus' : '');
  return `<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required value="${escapeHtml(username ?? '')}"${describedBy}${autofocus(!username)}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${describedBy}${autofocus(!!username)}>`;
}

/** A hidden form field. */
export const hiddenInput = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
