/**
 * What can go wrong, as classes a device's code can tell apart: each says what to do in `hint`.
 * A message never holds a token or a secret.
 */
export class VoyageError extends Error {
  constructor(
    message: string,
    /** What the device (or its user) should do about it. */
    readonly hint: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** 401 `invalid_client`: the client id or secret is wrong (or the client is disabled). */
export class InvalidClient extends VoyageError {
  constructor(description?: string) {
    super(`the service refused the client's credentials${description ? `: ${description}` : ''}`, 'check the client id and secret (VOYAGE_CLIENT_SECRET) the operator gave you');
  }
}

/** The user's sign-in is gone: no tokens are stored, or a refresh answered `invalid_grant`. */
export class SignInRequired extends VoyageError {
  constructor(reason: string) {
    super(reason, 'sign the user in again');
  }
}

/** The helper's link or the device code expired before the user signed in. */
export class SignInExpired extends VoyageError {
  constructor(reason = 'the sign-in expired before the user completed it') {
    super(reason, 'start the sign-in again');
  }
}

/** The user declined the device on the verification page. */
export class AccessDenied extends VoyageError {
  constructor() {
    super('the user denied the device', 'ask the user to approve it, or do without');
  }
}

/** 403: the client may not do this (it lacks the scope). */
export class Forbidden extends VoyageError {
  constructor(what: string) {
    super(`${what}: the client lacks the scope`, 'ask the operator to give the client the scope (client:update --scope …)');
  }
}

/** The service could not be reached, or kept answering 503, for longer than the call waits. */
export class ServiceUnavailable extends VoyageError {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, 'check the service address (--api) and the network; the call can be retried later', options);
  }
}

/** Any other refusal, with the service's own words. */
export class RequestRefused extends VoyageError {
  constructor(
    readonly status: number,
    readonly error: string | undefined,
    readonly description: string | undefined,
    what: string,
  ) {
    super(`${what} refused: ${status}${error ? ` ${error}` : ''}${description ? ` (${description})` : ''}`, 'the description says why; this is not retried');
  }
}
