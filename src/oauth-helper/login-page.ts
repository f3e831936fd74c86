import { credentialInputs, errorParagraph, escapeHtml, hiddenInput, PORTAL_ACCOUNT, pageLayout } from '../common/html/page-layout.js';

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

/** The login page of /sso/authorize. */
export function loginPage(form: LoginForm): string {
  return pageLayout(
    'Sign in',
    `<h1>Sign in</h1>
<p>Use your ${PORTAL_ACCOUNT} to continue to <strong>${escapeHtml(form.clientName)}</strong>.</p>
${form.deviceHost ? `<p>Your sign-in is sent to the device at <strong>${escapeHtml(form.deviceHost)}</strong>. Continue only if that is yours.</p>\n` : ''}${errorParagraph(form.error, 'login-error')}<form method="post" action="/sso/authorize" novalidate>
${hiddenInput('response_type', 'code')}
${hiddenInput('client_id', form.clientId)}
${hiddenInput('state', form.state)}
${hiddenInput('csrf_token', form.csrfToken)}
${credentialInputs(form.username, form.error ? 'login-error' : undefined)}
<button type="submit">Sign in</button>
</form>`,
  );
}

/** After a sign-in for a device that polls for its code: which application, as whom, and what next. */
export function signedInPage(view: { clientName: string; username: string }): string {
  return pageLayout(
    "You're signed in",
    `<h1>You're signed in</h1>
<p><strong>${escapeHtml(view.clientName)}</strong> is now signed in as <strong>${escapeHtml(view.username)}</strong>. Return to your device: it will finish signing in by itself.</p>`,
  );
}
