import { credentialInputs, errorParagraph, escapeHtml, hiddenInput, portalAccount } from './page-layout.js';

/** An identity provider as its sign-in button shows it. */
export interface ProviderChoice {
  name: string;
  displayName: string;
}

/** What a page that signs a browser in offers: the client's sign-in methods, and the last try's username and error. */
export interface SignInChoices {
  local: boolean;
  providers: ProviderChoice[];
  username?: string;
  error?: string;
}

const hiddenInputs = (fields: Record<string, string>) =>
  Object.entries(fields)
    .map(([name, value]) => hiddenInput(name, value))
    .join('\n');

/** The start of a sign-in page's introduction: a choice when there are providers, else the portal account. */
export const signInIntro = (choices: Pick<SignInChoices, 'providers'>) => (choices.providers.length > 0 ? 'Choose how to sign in' : `Use your ${portalAccount()}`);

/**
 * The sign-in form, one for every page that signs a browser in (the helper's login page, the
 * device flow's sign-in step): why the last try failed, a button per identity provider, and the
 * username and password form when the client allows local sign-in. Every form posts the page's
 * `fields` back to `action`.
 */
export function signInForm(action: string, fields: Record<string, string>, choices: SignInChoices): string {
  const local = choices.local
    ? `<form method="post" action="${action}" novalidate>
${hiddenInputs(fields)}
${credentialInputs(choices.username, choices.error ? 'login-error' : undefined, choices.providers.length === 0)}
<button type="submit">Sign in</button>
</form>`
    : '';
  return `${errorParagraph(choices.error, 'login-error')}${choices.providers.length > 0 ? providerButtons(action, fields, choices.providers, choices.local) : ''}${local}`;
}

/**
 * The sign-in choices of a page whose client signs in through identity providers: one form per
 * provider, each a button named `idp` whose value is the provider's name and whose text is its
 * display name, posting the page's own fields back (no JavaScript). `withLocal` adds the divider
 * before the page's username and password form.
 */
function providerButtons(action: string, fields: Record<string, string>, providers: ProviderChoice[], withLocal: boolean): string {
  const hidden = hiddenInputs(fields);
  const forms = providers
    .map(
      (provider) => `<form method="post" action="${action}" class="provider">
${hidden}
<button type="submit" name="idp" value="${escapeHtml(provider.name)}">${escapeHtml(provider.displayName)}</button>
</form>`,
    )
    .join('\n');
  return `${forms}\n${withLocal ? `<p class="divider"><span>or with your ${portalAccount()}</span></p>\n` : ''}`;
}
