// The upstream provider's own sign-in step (oidc-provider leaves the interaction pages to its host):
// a username/password form with "Sign-in" and "Cancel", and a consent step granted at once, the
// way a company's identity provider treats its own registered applications.

const escape = (text) => String(text).replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

function loginPage(uid, clientId, message) {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in</title></head>
<body>
  <h1>Sign-in</h1>
  <p>to continue to ${escape(clientId)}</p>
  ${message ? `<p role="alert">${escape(message)}</p>` : ''}
  <form method="post" action="/interaction/${escape(uid)}/login">
    <label>Username <input name="login" autocomplete="username" autofocus></label>
    <label>Password <input name="password" type="password" autocomplete="current-password"></label>
    <button type="submit">Sign-in</button>
  </form>
  <form method="post" action="/interaction/${escape(uid)}/abort"><button type="submit">Cancel</button></form>
</body></html>`;
}

async function readForm(request) {
  let body = '';
  for await (const chunk of request) body += chunk;
  return new URLSearchParams(body);
}

function sendHtml(response, status, html) {
  response.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  response.end(html);
}

/** Grants what the consent prompt says is missing (scopes and claims), as the example app's "confirm" does. */
async function grantConsent(provider, details) {
  const { prompt, params, session, grantId } = details;
  const grant = grantId ? await provider.Grant.find(grantId) : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
  const savedGrantId = await grant.save();
  return grantId ? {} : { grantId: savedGrantId };
}

/**
 * Handles `/interaction/:uid[/login|/abort]`; answers false for any other path. `accounts` maps
 * sub to the account (with its password).
 */
export async function handleInteraction(provider, accounts, request, response) {
  const match = /^\/interaction\/([^/]+)(?:\/(login|abort))?$/.exec(new URL(request.url, 'http://x').pathname);
  if (!match) return false;
  const [, uid, action] = match;
  const details = await provider.interactionDetails(request, response);

  if (action === 'abort') {
    await provider.interactionFinished(request, response, { error: 'access_denied', error_description: 'End-User aborted interaction' }, { mergeWithLastSubmission: false });
  } else if (action === 'login') {
    const form = await readForm(request);
    const account = [...accounts.values()].find((candidate) => [candidate.preferred_username, candidate.sub].includes(form.get('login')));
    if (!account || account.password !== form.get('password')) {
      sendHtml(response, 200, loginPage(uid, details.params.client_id, 'Invalid username or password.'));
    } else {
      await provider.interactionFinished(request, response, { login: { accountId: account.sub } }, { mergeWithLastSubmission: false });
    }
  } else if (details.prompt.name === 'consent') {
    const consent = await grantConsent(provider, details);
    await provider.interactionFinished(request, response, { consent }, { mergeWithLastSubmission: true });
  } else {
    sendHtml(response, 200, loginPage(uid, details.params.client_id));
  }
  return true;
}

/** The RP-initiated logout page: signs out at once (the script presses "Yes"), with the button kept for a browser without JavaScript. */
export function logoutPage(form) {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-out</title></head>
<body>
  <h1>Sign-out</h1>
  ${form}
  <button type="submit" form="op.logoutForm" name="logout" value="yes" id="logout-yes">Yes, sign me out</button>
  <button type="submit" form="op.logoutForm">No, stay signed in</button>
  <script>document.getElementById('logout-yes').click();</script>
</body></html>`;
}

export function signedOutPage() {
  return '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Signed out</title></head><body><h1>You are signed out</h1></body></html>';
}

export function errorPage(out) {
  const lines = Object.entries(out).map(([key, value]) => `<p><strong>${escape(key)}</strong>: ${escape(value)}</p>`);
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Error</title></head><body><h1>Something went wrong</h1>${lines.join('')}</body></html>`;
}
