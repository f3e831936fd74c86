/** Which sign-in began a grant: the helper flow, the standard device flow (RFC 8628), or a standard authorization request (RFC 6749 §4.1). */
export type GrantFlow = 'helper' | 'device' | 'code';

/** A user's grant as the token issuer sees it: the family of tokens one sign-in produced. */
export interface UserGrant {
  grantId: string;
  clientId: string;
  userId: string;
  scope: string | null;
  flow: GrantFlow;
  /** The authorization request's nonce, for the ID token of the code exchange only. */
  nonce?: string;
}

/** A grant revoked, and until when that matters: its last access token expires then. */
export interface RevokedGrant {
  id: string;
  until: Date;
}
