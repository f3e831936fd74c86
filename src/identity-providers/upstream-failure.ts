import * as oidc from 'openid-client';

/**
 * Why a call to an upstream provider did not succeed, in three kinds the service answers
 * differently:
 * - `unreachable`: no answer in time, a refused connection, or a 5xx (503 to the user or device;
 *   nothing is changed);
 * - `refused`: the provider answered an OAuth error (`invalid_grant`, `access_denied`…), in `error`;
 * - `invalid`: its answer failed a check (an ID token's signature, issuer, audience…), said in
 *   `message` without any token or secret.
 */
export class UpstreamFailure extends Error {
  override name = 'UpstreamFailure';

  private constructor(
    readonly kind: 'unreachable' | 'refused' | 'invalid',
    message: string,
    readonly error?: string,
  ) {
    super(message);
  }

  static unreachable(message: string) {
    return new UpstreamFailure('unreachable', message);
  }

  static invalid(message: string) {
    return new UpstreamFailure('invalid', message);
  }

  static refused(error: string) {
    // The provider's words, shown on a page and logged: an OAuth error code or nothing (RFC 6749 §5.2 limits its characters).
    const code = /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/.test(error) ? error : 'an unreadable error';
    return new UpstreamFailure('refused', `it answered ${code}`, code);
  }

  /** Classifies what openid-client threw. */
  static from(error: unknown): UpstreamFailure {
    if (error instanceof UpstreamFailure) return error;
    if (error instanceof oidc.ResponseBodyError) return error.status >= 500 ? UpstreamFailure.unreachable(`it answered HTTP ${error.status}`) : UpstreamFailure.refused(error.error);
    if (error instanceof oidc.AuthorizationResponseError) return UpstreamFailure.refused(error.error);
    if (isNetworkFailure(error)) return UpstreamFailure.unreachable('it did not answer in time or refused the connection');
    const code = (error as { code?: string }).code;
    const cause = (error as { cause?: { status?: number } }).cause;
    if (code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' && (statusOf(cause) ?? 0) >= 500) return UpstreamFailure.unreachable(`it answered HTTP ${statusOf(cause)}`);
    return UpstreamFailure.invalid(describeCheck(error, code));
  }
}

const CLAIM_CHECKS: Record<string, string> = {
  iss: 'the ID token was issued by another issuer',
  aud: 'the ID token is meant for another client',
  azp: 'the ID token was issued to another party (azp)',
  nonce: "the ID token's nonce is not this sign-in's",
  exp: 'the ID token has expired',
  iat: 'the ID token was issued too long ago or in the future',
  nbf: 'the ID token is not valid yet',
};

/**
 * What failed, in words fit for a page and a log line: claim names and check names, never values.
 * openid-client wraps oauth4webapi's error, whose own cause names the claim: the whole chain is read.
 */
function describeCheck(error: unknown, code: string | undefined): string {
  const { claim, messages } = causeChain(error);
  if (claim && CLAIM_CHECKS[claim]) return CLAIM_CHECKS[claim];
  const message = messages[0] ?? String(error);
  const all = messages.join(' | ');
  const missing = /JWT "(\w+)" \([^)]*\) claim missing/.exec(all);
  if (missing) return `the ID token has no "${missing[1]}" claim`;
  if (code === 'OAUTH_KEY_SELECTION_FAILED') return "the ID token is signed with a key the provider's JWKS does not list";
  if (message === 'JWT signature verification failed') return "the ID token's signature does not verify";
  if (code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED') {
    const named = (error as { cause?: { body?: { issuer?: unknown } } }).cause?.body?.issuer;
    return typeof named === 'string' ? `its discovery document names another issuer: ${named.slice(0, 200)}` : 'its discovery document names another issuer';
  }
  if (code === 'OAUTH_INVALID_SERVER_METADATA') return `its discovery document is not valid: ${message}`;
  if (code === 'OAUTH_RESPONSE_IS_NOT_CONFORM') return `it answered HTTP ${statusOf((error as { cause?: unknown }).cause) ?? '(no status)'} where an OpenID provider answers 200`;
  if (code === 'OAUTH_RESPONSE_IS_NOT_JSON') return 'it did not answer JSON, as an OpenID provider does';
  if (/state/.test(all)) return "the answer's state is not this sign-in's";
  if (/"iss"/.test(all)) return 'the answer names another issuer (RFC 9207 iss)';
  if (/id_token/.test(all)) return 'the answer has no valid ID token';
  return message.replace(/[\r\n]+/g, ' ').slice(0, 200);
}

/** The first `claim` named along an error's cause chain, and each message on it, outermost first. */
function causeChain(error: unknown): { claim?: string; messages: string[] } {
  const messages: string[] = [];
  let claim: string | undefined;
  for (let current = error, depth = 0; current !== null && typeof current === 'object' && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    const { claim: named, message } = current as { claim?: unknown; message?: unknown };
    if (claim === undefined && typeof named === 'string') claim = named;
    if (typeof message === 'string') messages.push(message);
  }
  return { claim, messages };
}

function statusOf(cause: unknown): number | undefined {
  return cause instanceof Response ? cause.status : (cause as { status?: number } | undefined)?.status;
}

/** fetch's own failures (refused, reset, DNS) and the timeout's abort, anywhere in the cause chain. */
function isNetworkFailure(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    const { name, message } = current as { name?: string; message?: string };
    if (name === 'TimeoutError' || name === 'AbortError') return true;
    if (current instanceof TypeError && message === 'fetch failed') return true;
  }
  return false;
}
