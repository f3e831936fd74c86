import type { Logger } from 'pino';
import type { Requester } from '../http/requester.js';

/** Done by an operator with the CLI. */
type ByOperator = { reason: 'cli' };

/**
 * Every security event, with the fields it carries besides `event`, `reason` and, for one caused
 * by a request, `address` and `reqId`. Never a secret: no password, code, token, state or key
 * material, only ids. docs/security-events.md describes each one.
 */
export interface SecurityEventFields {
  'login.failed': { reason: 'wrong_password' | 'unknown_user' | 'disabled_user'; clientId: string; username: string; userId?: string };
  'login.throttled': { reason: 'slow_down'; clientId: string; username: string; waitSeconds: number };
  'token.replayed':
    | { reason: 'code_replayed' | 'refresh_token_reused'; clientId: string; userId: string; grantId: string | null; grantRevoked: boolean }
    /** A relayed code: no local user nor grant; the provider's tokens it handed over are forgotten. */
    | { reason: 'code_replayed'; clientId: string; userId: null; grantId: null; grantRevoked: false; provider: string; relayedTokensForgotten: number };
  'grant.revoked': { reason: 'revoked_by_client'; clientId: string; userId: string; grantId: string };
  'device.denied': { reason: 'user_denied'; clientId: string; userId: string | null };
  'client.refused': { reason: 'unknown_client' | 'wrong_secret' | 'disabled_client' | 'public_client_sent_secret' | 'public_client_not_allowed'; clientId: string };
  'key.revoked': ByOperator & { kid: string; alreadyRevoked: boolean; replacedBy: string | null };
  'user.disabled': ByOperator & { username: string; userId: string; revokedGrants: number };
  'user.enabled': ByOperator & { username: string; userId: string };
  'user.unlocked': ByOperator & { username: string; clearedSlowDowns: number };
  'user.password_set': ByOperator & { username: string; userId: string; revokedGrants: number };
  /** `grantId`: one grant signed out (grants:revoke --grant), its client's id in `clientId`. */
  'user.signed_out': ByOperator & { userId: string; clientId: string | null; revokedGrants: number; grantId?: string };
  'upstream.refused': { reason: 'unknown_provider' | 'no_state' | 'unknown' | 'used' | 'expired' | 'other_browser'; provider: string };
  'upstream.failed': { reason: 'unreachable' | 'refused' | 'invalid'; provider: string; check: string; clientId: string };
  'upstream.cancelled': { reason: 'provider_error'; provider: string; error: string; clientId: string };
  'upstream.signed_in': { reason: 'broker' | 'relay'; provider: string; clientId: string; userId: string | null };
  'upstream.recheck_failed': { reason: 'invalid_grant' | 'unreachable'; provider: string; clientId: string; userId: string; grantId: string; grantRevoked: boolean };
  /** A read of the admin API (`route` is its path pattern, as `GET /admin/v1/users/:username`). */
  'admin.read': { reason: 'admin_api'; clientId: string; route: string };
}

/**
 * An administrative change made through HTTP, named by the audit trail's action: `admin.` and the
 * action (`admin.user.disabled`), or `client.registered` for a registration (RFC 7591). `clientId`
 * is the caller; what it changed is named by the other fields, never a secret.
 */
export type AdminChangeEvent = 'client.registered' | `admin.${string}`;
export interface AdminChangeFields {
  reason: 'admin_api' | 'registration';
  clientId: string;
  action: string;
  subjectClientId: string | null;
  username: string | null;
  target: string | null;
  details: Record<string, unknown>;
}

export type SecurityEvent = keyof SecurityEventFields;

/** Each event's level (warn: someone may be attacking, or a key was stolen) and its message. */
const EVENTS: { [E in SecurityEvent]: { level: 'info' | 'warn'; says: string } } = {
  'login.failed': { level: 'info', says: 'sign-in refused' },
  'login.throttled': { level: 'warn', says: 'sign-in refused: too many failed attempts' },
  'token.replayed': { level: 'warn', says: 'a used code or refresh token came back' },
  'grant.revoked': { level: 'info', says: 'grant revoked by its client' },
  'device.denied': { level: 'info', says: 'the user denied the device' },
  'client.refused': { level: 'info', says: 'client authentication failed' },
  'key.revoked': { level: 'warn', says: 'signing key revoked' },
  'user.disabled': { level: 'info', says: 'user disabled' },
  'user.enabled': { level: 'info', says: 'user enabled' },
  'user.unlocked': { level: 'info', says: "user's sign-in slow-down cleared" },
  'user.password_set': { level: 'info', says: 'user password set' },
  'user.signed_out': { level: 'info', says: "user's devices signed out" },
  'upstream.refused': { level: 'warn', says: 'identity provider callback refused: not this browser\'s sign-in' },
  'upstream.failed': { level: 'warn', says: 'sign-in at the identity provider failed' },
  'upstream.cancelled': { level: 'info', says: 'sign-in cancelled at the identity provider' },
  'upstream.signed_in': { level: 'info', says: 'signed in at the identity provider' },
  'upstream.recheck_failed': { level: 'warn', says: "the identity provider refused a brokered user's refresh" },
  'admin.read': { level: 'info', says: 'read through the admin API' },
};

/**
 * The security event log: one line per event, with a stable `event` name, answering "why can't
 * this user sign in?" without a debug level. Written on the logger it was given (the service's or
 * the CLI's), so lines are JSON or, at a terminal, readable.
 */
export class SecurityEvents {
  constructor(private readonly log: Logger) {}

  emit<E extends SecurityEvent>(event: E, fields: SecurityEventFields[E], requester?: Requester): void {
    try {
      const { level, says } = EVENTS[event];
      const line: Record<string, unknown> = { event, ...fields };
      if (requester) Object.assign(line, { address: requester.address, reqId: requester.requestId });
      this.log[level](line, says);
    } catch {
      // A log line never fails, nor delays, what it reports.
    }
  }

  emitAdminChange(event: AdminChangeEvent, fields: AdminChangeFields, requester?: Requester): void {
    try {
      const line: Record<string, unknown> = { event, ...fields };
      if (requester) Object.assign(line, { address: requester.address, reqId: requester.requestId });
      this.log.info(line, event === 'client.registered' ? 'client registered' : 'administrative change through the admin API');
    } catch {
      // As emit: never fails what it reports.
    }
  }
}
