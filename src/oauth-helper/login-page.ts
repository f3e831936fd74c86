import { escapeHtml, hiddenInput, pageLayout } from '../common/html/page-layout.js';
import { type ProviderChoice, signInForm, signInIntro } from '../common/html/sign-in-form.js';

export interface LoginForm {
  clientName: string;
  clientId: string;
  state: string;
  csrfToken: string;
  username?: string;
  error?: string;
  /** Where the code goes after sign-in (the redirect's host), named so the user can tell whether it is their device (RFC 9700 §4.2). */
  deviceHost?: string;
  /** Whether the username and password form is offered (the client's `local` sign-in method). */
  local: boolean;
  /** The identity providers the client signs in with, a button each. */
  providers: ProviderChoice[];
}

/** The login page of /sso/authorize. */
export function loginPage(form: LoginForm): string {
  const fields = { response_type: 'code', client_id: form.clientId, state: form.state, csrf_token: form.csrfToken };
  return pageLayout(
    'Sign in',
    `<h1>Sign in</h1>
<p>${signInIntro(form)} to continue to <strong>${escapeHtml(form.clientName)}</strong>.</p>
${form.deviceHost ? `<p>Your sign-in is sent to the device at <strong>${escapeHtml(form.deviceHost)}</strong>. Continue only if that is yours.</p>\n` : ''}${signInForm('/sso/authorize', fields, form)}`,
  );
}

/**
 * The browser is signed in here already (single sign-on): the link goes on as that user only on
 * their word, or they sign in as someone else.
 */
export function continueAsPage(view: { clientName: string; clientId: string; state: string; csrfToken: string; username: string; deviceHost?: string }): string {
  const fields = { response_type: 'code', client_id: view.clientId, state: view.state, csrf_token: view.csrfToken };
  return pageLayout(
    `Continue to ${view.clientName}?`,
    `<h1>Continue to <strong>${escapeHtml(view.clientName)}</strong>?</h1>
<p>You are signed in as <strong>${escapeHtml(view.username)}</strong>.</p>
${view.deviceHost ? `<p>Your sign-in is sent to the device at <strong>${escapeHtml(view.deviceHost)}</strong>. Continue only if that is yours.</p>\n` : ''}<form method="post" action="/sso/authorize">
${Object.entries(fields).map(([name, value]) => hiddenInput(name, value)).join('\n')}
<button type="submit" name="session" value="continue">Continue as ${escapeHtml(view.username)}</button>
<button type="submit" name="session" value="another" class="secondary">Use another account</button>
</form>`,
  );
}

/**
 * After a sign-in at a provider: as whom, and, as the login page said before the user left for
 * the provider, where the sign-in goes. Nothing reaches the device before "Continue".
 */
export function confirmPage(view: {
  clientName: string;
  clientId: string;
  state: string;
  confirmation: string;
  providerName: string;
  username?: string;
  deviceHost?: string;
  /** An app's own standard request, not a device's link: there is no device to warn about. */
  app?: boolean;
}): string {
  // No CSRF cookie: the one-time value, bound to the browser's sign-in cookie, is this form's token.
  const fields = { response_type: 'code', client_id: view.clientId, state: view.state, confirmation: view.confirmation };
  const as = view.username
    ? `You signed in as <strong>${escapeHtml(view.username)}</strong> with ${escapeHtml(view.providerName)}.`
    : `You signed in with <strong>${escapeHtml(view.providerName)}</strong>.`;
  const where = view.app
    ? ''
    : view.deviceHost
      ? `<p>Your sign-in is sent to the device at <strong>${escapeHtml(view.deviceHost)}</strong>. Continue only if that is yours.</p>\n`
      : '<p>Continue only if you started this sign-in on your device.</p>\n';
  return pageLayout(
    `Continue to ${view.clientName}?`,
    `<h1>Continue to <strong>${escapeHtml(view.clientName)}</strong>?</h1>
<p>${as}</p>
${where}<form method="post" action="/sso/authorize">
${Object.entries(fields).map(([name, value]) => hiddenInput(name, value)).join('\n')}
<button type="submit" name="decision" value="continue">Continue</button>
<button type="submit" name="decision" value="cancel" class="secondary">Cancel</button>
</form>`,
  );
}

/**
 * After a sign-in for a device that polls for its code: which application, as whom (or, relayed,
 * with which provider's account: the service never learns the user), and what next.
 */
export function signedInPage(view: { clientName: string } & ({ username: string } | { providerName: string })): string {
  // A provider is named as its display name says (often "Corp account" already), never with "account" added.
  const as = 'username' in view ? `as <strong>${escapeHtml(view.username)}</strong>` : `with <strong>${escapeHtml(view.providerName)}</strong>`;
  return pageLayout(
    "You're signed in",
    `<h1>You're signed in</h1>
<p><strong>${escapeHtml(view.clientName)}</strong> is now signed in ${as}. Return to your device: it will finish signing in by itself.</p>`,
  );
}
