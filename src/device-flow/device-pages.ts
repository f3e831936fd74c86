import { errorParagraph, escapeHtml, hiddenInput, noticeParagraph, pageLayout } from '../common/html/page-layout.js';
import { type SignInChoices, signInForm, signInIntro } from '../common/html/sign-in-form.js';
import { displayUserCode } from './user-code.js';

// The three steps of the verification page (RFC 8628 §3.3): enter the code, sign in (or, within a
// browser session, continue as its user), approve or deny. Every form posts to /sso/device; the
// steps carry the code forward in a hidden field.

const ACTION = '/sso/device';

/**
 * Step 1: the code the device shows (pre-filled from verification_uri_complete, still to be
 * confirmed). Above the form, why the last code was not taken (`error`), or that it needs nothing
 * more (`notice`: approved already).
 */
export function codeEntryPage(form: { csrfToken: string; userCode?: string; error?: string; notice?: string }): string {
  const describedBy = form.error ? 'code-error code-hint' : 'code-hint';
  return pageLayout(
    'Connect a device',
    `<h1>Connect a device</h1>
<p>Enter the code shown on your device.</p>
${errorParagraph(form.error, 'code-error')}${noticeParagraph(form.notice)}<form method="post" action="${ACTION}" novalidate>
${hiddenInput('csrf_token', form.csrfToken)}
<label for="user_code">Code</label>
<input id="user_code" name="user_code" class="code" type="text" inputmode="text" autocomplete="off" autocapitalize="characters" spellcheck="false" required maxlength="64" value="${escapeHtml(form.userCode ?? '')}" aria-describedby="${describedBy}" autofocus>
<p class="hint" id="code-hint">The 8 letters on your device's screen, in upper or lower case, with or without the dash.</p>
<button type="submit">Continue</button>
</form>`,
  );
}

export interface DeviceRequestView {
  userCode: string;
  clientName: string;
  csrfToken: string;
}

/** Step 2: sign in (at an identity provider, or with a username and password), with the client named so the user sees what they are connecting. */
export function deviceSignInPage(view: DeviceRequestView & SignInChoices): string {
  const fields = { csrf_token: view.csrfToken, user_code: view.userCode };
  return pageLayout(
    'Sign in',
    `<h1>Sign in</h1>
<p>${signInIntro(view)} to connect <strong>${escapeHtml(view.clientName)}</strong> with the code <span class="code">${displayUserCode(view.userCode)}</span>.</p>
${signInForm(ACTION, fields, view)}`,
  );
}

/**
 * Step 2 within a browser session: its user may go on to the approval form, or another account
 * signs in. Someone may have sent the code, so the session never answers it silently.
 */
export function continueAsPage(view: DeviceRequestView & { username: string; providerName?: string }): string {
  return pageLayout(
    'Choose an account',
    `<h1>Choose an account</h1>
<p>To connect <strong>${escapeHtml(view.clientName)}</strong> with the code <span class="code">${displayUserCode(view.userCode)}</span>:</p>
<p>You are signed in as <strong>${escapeHtml(view.username)}</strong>${view.providerName ? ` with ${escapeHtml(view.providerName)}` : ''}.</p>
<form method="post" action="${ACTION}">
${hiddenInput('csrf_token', view.csrfToken)}
${hiddenInput('user_code', view.userCode)}
<button type="submit" name="session" value="continue">Continue as ${escapeHtml(view.username)}</button>
<button type="submit" name="session" value="another" class="secondary">Use another account</button>
</form>`,
  );
}

/** One scope as the user reads it: the operator's description, else its name, shown as a name. */
const scopeItem = (scope: string, descriptions: Record<string, string>) =>
  `<li>${Object.hasOwn(descriptions, scope) ? escapeHtml(descriptions[scope]) : `<code>${escapeHtml(scope)}</code>`}</li>`;

/** Step 3: the decision, naming the client and the scopes (RFC 8628 §5.4: the user confirms what the device asks). */
export function approvalPage(
  view: DeviceRequestView & { username?: string; scopes: string[]; scopeDescriptions: Record<string, string>; approvalNonce: string; providerName?: string },
): string {
  const asks = view.scopes.length
    ? `<p>It asks for these permissions:</p>\n<ul class="scopes">${view.scopes.map((scope) => scopeItem(scope, view.scopeDescriptions)).join('')}</ul>`
    : '<p>It asks to act for you on your account.</p>';
  return pageLayout(
    `Connect ${view.clientName}?`,
    `<h1>Connect <strong>${escapeHtml(view.clientName)}</strong>?</h1>
<p>You are signed in${view.username ? ` as <strong>${escapeHtml(view.username)}</strong>` : ''}${view.providerName ? ` with ${escapeHtml(view.providerName)}` : ''}.</p>
${asks}
<p>Approve only if you started this on your device and it shows this code:</p>
<p class="code">${displayUserCode(view.userCode)}</p>
<form method="post" action="${ACTION}">
${hiddenInput('csrf_token', view.csrfToken)}
${hiddenInput('user_code', view.userCode)}
${hiddenInput('approval', view.approvalNonce)}
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`,
  );
}

/** The end: the decision, naming the device and the account it was for. */
export function decidedPage(decision: 'approved' | 'denied', view: { clientName: string; username: string | null }): string {
  // A relayed sign-in has no account here: the provider's own tokens go to the device.
  const client = `<strong>${escapeHtml(view.clientName)}</strong>`;
  const account = view.username === null ? null : `<strong>${escapeHtml(view.username)}</strong>`;
  return decision === 'approved'
    ? pageLayout('Device connected', `<h1>Device connected</h1>\n<p>${client} is now signed in${account ? ` as ${account}` : ''}. Return to your device: it will finish by itself.</p>`)
    : pageLayout('Request denied', `<h1>Request denied</h1>\n<p>${client} was not connected to your account${account ? ` (${account})` : ''}. You can close this page.</p>`);
}
