/** Every kind of administrative change the audit trail records; docs/security-events.md lists them. */
export const AUDIT_ACTIONS = [
  'client.created',
  'client.registered',
  'client.updated',
  'client.enabled',
  'client.disabled',
  'client.secret_rotated',
  'client.deleted',
  'user.created',
  'user.password_set',
  'user.disabled',
  'user.enabled',
  'user.unlocked',
  'user.signed_out',
  'key.rotated',
  'key.revoked',
  'idp.created',
  'idp.updated',
  'idp.secret_rotated',
  'idp.deleted',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** A value the trail may keep: names, ids, counts, flags, lists of them. Never a secret. */
export type AuditDetail = string | number | boolean | null | string[];

/** One administrative change, as its service describes it to the audit trail. */
export interface AdminChange {
  action: AuditAction;
  /** The client changed, or whose grants a change ended. */
  clientId?: string | null;
  /** The user changed, or signed out. */
  username?: string | null;
  /** What else it names: a key id, a grant id, a provider's name. */
  target?: string | null;
  /** What changed, by name (which fields, how many grants revoked): never a secret or a hash. */
  details?: Record<string, AuditDetail>;
}
