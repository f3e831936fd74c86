import type { IdentityProviderEntity } from '../identity-provider.entity.js';

// What the sign-in pages (the helper's and the device flow's) say about identity providers, once.

type Named = Pick<IdentityProviderEntity, 'displayName'>;

/** The password form was sent for a client that signs in through providers only. */
export const providersOnly = (clientName: string, providers: Named[]) => `${clientName} signs in through ${providers.map((provider) => provider.displayName).join(' or ')} only.`;

/** A provider button that is not among the client's methods (an old tab, a forged form). */
export const NOT_OFFERED = 'That way of signing in is not offered here. Choose one below.';

/** The page when a provider's configuration cannot be had: seconds to wait, title and message. */
export const providerUnavailable = (provider: Named) => ({
  retryAfter: 5,
  title: `${provider.displayName} is unavailable`,
  message: `${provider.displayName} cannot be reached right now. Try again in a moment.`,
});

/** A brokered user disabled here: a new sign-in cannot help, only the administrator can. */
export const ACCOUNT_DISABLED = {
  title: 'Your account is disabled',
  message: 'Your account has been disabled here by an administrator, so it cannot sign in. To use it again, ask the administrator of this service to enable it.',
};
