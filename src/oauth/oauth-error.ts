import { errorDescription } from '../common/errors/error-description.js';

/**
 * RFC 6749 §5.2 error codes, plus RFC 7009's unsupported_token_type, RFC 8707's invalid_target,
 * the device grant's answers to a poll (RFC 8628 §3.5) and a protected resource's refusals of a
 * bearer token (RFC 6750 §3.1, at userinfo) and a registration's refusals (RFC 7591 §3.2.2).
 */
export const OAUTH_ERROR_CODES = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'unsupported_token_type',
  'invalid_target',
  'authorization_pending',
  'slow_down',
  'access_denied',
  'expired_token',
  'server_error',
  'temporarily_unavailable',
  'invalid_token',
  'insufficient_scope',
  'invalid_redirect_uri',
  'invalid_client_metadata',
] as const;

export type OAuthErrorCode = (typeof OAUTH_ERROR_CODES)[number];

const STATUS_BY_ERROR: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  server_error: 500,
  temporarily_unavailable: 503,
};

/**
 * An error of an OAuth endpoint, answered as `{ error, error_description }`. The description is
 * kept in RFC 6749 §5.2's characters and length (errorDescription): it may quote the request.
 */
export class OAuthError extends Error {
  readonly status: number;
  readonly description: string;
  /** invalid_client only: the client authenticated with HTTP Basic, so the 401 names the scheme. */
  readonly basicChallenge: boolean;
  /** Seconds the caller should wait before asking again (`Retry-After`), for a 429. */
  readonly retryAfter?: number;

  constructor(
    readonly error: OAuthErrorCode,
    description: string,
    options: { status?: number; basicChallenge?: boolean; retryAfter?: number } = {},
  ) {
    super(errorDescription(description));
    this.description = this.message;
    this.name = 'OAuthError';
    this.basicChallenge = options.basicChallenge ?? false;
    this.retryAfter = options.retryAfter;
    this.status = options.status ?? STATUS_BY_ERROR[error] ?? 400;
  }
}

/** The description of a body that is not a form, wherever it is refused. */
export const UNSUPPORTED_MEDIA_TYPE = 'unsupported content type: send application/x-www-form-urlencoded';

export const invalidRequest = (description: string) => new OAuthError('invalid_request', description);
export const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);
export const invalidScope = (description: string) => new OAuthError('invalid_scope', description);
