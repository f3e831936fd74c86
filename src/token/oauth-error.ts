/** RFC 6749 §5.2 error codes, plus RFC 7009's unsupported_token_type and RFC 8707's invalid_target. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'unsupported_token_type'
  | 'invalid_target'
  | 'server_error'
  | 'temporarily_unavailable';

const STATUS_BY_ERROR: Partial<Record<OAuthErrorCode | 'slow_down', number>> = {
  invalid_client: 401,
  server_error: 500,
  temporarily_unavailable: 503,
};

/** An error of an OAuth endpoint, answered as `{ error, error_description }`. */
export class OAuthError extends Error {
  readonly status: number;
  /** invalid_client only: the client authenticated with HTTP Basic, so the 401 names the scheme. */
  readonly basicChallenge: boolean;

  constructor(
    readonly error: OAuthErrorCode | 'slow_down',
    readonly description: string,
    options: { status?: number; basicChallenge?: boolean } = {},
  ) {
    super(description);
    this.name = 'OAuthError';
    this.basicChallenge = options.basicChallenge ?? false;
    this.status = options.status ?? STATUS_BY_ERROR[error] ?? 400;
  }
}

export const invalidRequest = (description: string) => new OAuthError('invalid_request', description);
export const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);
export const invalidScope = (description: string) => new OAuthError('invalid_scope', description);
