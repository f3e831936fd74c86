/**
 * What the user is told of a sign-in through a provider that a sign-out of theirs voided while it
 * waited (at the provider, or on "Continue to CLIENT?"; see revocations.ts): nothing was sent on.
 */
export const ENDED_SIGN_IN = {
  title: 'This sign-in has ended',
  message: 'You were signed out here after this sign-in began, so nothing was sent on. Start the sign-in again from your device.',
} as const;
