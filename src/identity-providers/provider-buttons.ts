import { escapeHtml, hiddenInput, portalAccount } from '../common/html/page-layout.js';
import type { IdentityProviderEntity } from './identity-provider.entity.js';

/**
 * The sign-in choices of a page whose client signs in through identity providers: one form per
 * provider, each a button named `idp` whose value is the provider's name and whose text is its
 * display name, posting the page's own fields back (no JavaScript). `withLocal` adds the divider
 * before the page's username and password form.
 */
export function providerButtons(action: string, fields: Record<string, string>, providers: Pick<IdentityProviderEntity, 'name' | 'displayName'>[], withLocal: boolean): string {
  const hidden = Object.entries(fields)
    .map(([name, value]) => hiddenInput(name, value))
    .join('\n');
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
