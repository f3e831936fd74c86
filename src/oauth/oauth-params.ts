import { invalidRequest, OAuthError, UNSUPPORTED_MEDIA_TYPE } from './oauth-error.js';

/** An OAuth request's parameters: present, single-valued, non-empty strings only. */
export type OAuthParams = ReadonlyMap<string, string>;

/**
 * Reads a form body: RFC 6749 §3.1/§3.2 — a repeated parameter is invalid_request, an empty one
 * counts as absent, unknown ones are ignored by whoever reads the map. A value with a NUL
 * character is invalid_request too.
 */
export function readOAuthParams(body: unknown): OAuthParams {
  if (body === undefined || body === null) return new Map();
  if (typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('the body must be application/x-www-form-urlencoded');
  const params = new Map<string, string>();
  for (const [name, value] of Object.entries(body)) {
    if (Array.isArray(value)) throw invalidRequest(`parameter ${name} is repeated`);
    if (typeof value !== 'string') throw invalidRequest('the body must be application/x-www-form-urlencoded');
    // PostgreSQL cannot store U+0000 in text; no OAuth parameter has a use for it.
    if (value.includes('\u0000')) throw invalidRequest(`parameter ${name} contains a NUL character`);
    if (value !== '') params.set(name, value);
  }
  return params;
}

/**
 * The body of a token, introspection or revocation request: RFC 6749 §3.2, RFC 7662 §2.1 and
 * RFC 7009 §2.1 take application/x-www-form-urlencoded only, so a JSON object is refused (415,
 * like a media type Fastify cannot read at all) even when its values happen to be strings.
 */
export function readFormBody(contentType: string | undefined, body: unknown): OAuthParams {
  const mediaType = contentType?.split(';')[0].trim().toLowerCase();
  if (body !== undefined && body !== null && mediaType !== 'application/x-www-form-urlencoded') {
    throw new OAuthError('invalid_request', UNSUPPORTED_MEDIA_TYPE, { status: 415 });
  }
  return readOAuthParams(body);
}

export function requireParam(params: OAuthParams, name: string): string {
  const value = params.get(name);
  if (value === undefined) throw invalidRequest(`missing parameter ${name}`);
  return value;
}
