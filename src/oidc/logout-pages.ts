import { escapeHtml, hiddenInput, messagePage, pageLayout } from '../common/html/page-layout.js';

/**
 * Logout without an ID token to prove who asks: the user says so (a link alone never signs anyone
 * out), or stays signed in, which leads to the service's home page (no JavaScript: no "back").
 */
export function confirmLogoutPage(view: { username: string; csrfToken: string; fields: Record<string, string> }): string {
  const hidden = Object.entries({ ...view.fields, csrf_token: view.csrfToken })
    .map(([name, value]) => hiddenInput(name, value))
    .join('\n');
  return pageLayout(
    'Sign out?',
    `<h1>Sign out?</h1>
<p>You are signed in as <strong>${escapeHtml(view.username)}</strong>. Signing out here means every application that signs you in through this service asks for your password again.</p>
<form method="post" action="/sso/logout">
${hidden}
<button type="submit">Sign out</button>
</form>
<a class="button" href="/">Stay signed in</a>`,
  );
}

export const signedOutPage = () => messagePage("You're signed out", 'You are no longer signed in here. You can close this page.');
