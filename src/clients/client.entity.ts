import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** RFC 8628 §3.4: the device authorization grant's `grant_type`. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials', DEVICE_CODE_GRANT] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/** Short names an operator may type for a grant type. */
const GRANT_ALIASES: Readonly<Record<string, GrantType>> = { device_code: DEVICE_CODE_GRANT };

/** A grant type as stored: an alias becomes the full name, anything else is left for validation to judge. */
export const resolveGrantAlias = (grant: string): string => GRANT_ALIASES[grant] ?? grant;

/**
 * How a client authenticates at the token endpoints, by its RFC 7591 §2 name: with its secret
 * (`client_secret_basic`, the default, or `client_secret_post`, as a registration asked: either is
 * accepted from any confidential client), or not at all (`none`: a public client, which names
 * itself with `client_id` and must use PKCE).
 */
export const TOKEN_ENDPOINT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'] as const;
export type TokenEndpointAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];

/** The algorithms an ID token may be signed with (OpenID Connect Dynamic Client Registration's `id_token_signed_response_alg`). */
export const ID_TOKEN_ALGS = ['RS256', 'ES256'] as const;
export type IdTokenAlg = (typeof ID_TOKEN_ALGS)[number];

/**
 * Seconds a client's own heartbeat may be (`--heartbeat`): pings more often than every 5 s help
 * no link, and one silent for over an hour is not noticed dead for two.
 */
export const CLIENT_HEARTBEAT_SECONDS = { min: 5, max: 3600 } as const;

/** A public client has no secret: it cannot authenticate, so it must prove possession of its codes with PKCE. */
export const isPublicClient = (client: Pick<ClientEntity, 'tokenEndpointAuthMethod'>) => client.tokenEndpointAuthMethod === 'none';

@Entity('clients')
export class ClientEntity {
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  name: string;

  @Column('text', { array: true })
  grants: GrantType[];

  @Column('text', { name: 'redirect_patterns', array: true })
  redirectPatterns: string[];

  @Column('text', { array: true })
  scopes: string[];

  /** What the approval page shows for each scope instead of its name; a scope without one is shown by name. */
  @Column('jsonb', { name: 'scope_descriptions' })
  scopeDescriptions: Record<string, string>;

  /** How its users sign in: 'local' (the service's own portal users) and/or identity provider names (src/identity-providers/). */
  @Column('text', { name: 'sign_in', array: true })
  signIn: string[];

  @Column('boolean')
  enabled: boolean;

  /** Where RP-initiated logout may send the browser afterwards: exact URLs (see post-logout-redirect.ts). */
  @Column('text', { name: 'post_logout_redirect_uris', array: true })
  postLogoutRedirectUris: string[];

  /** What its ID tokens are signed with. */
  @Column('text', { name: 'id_token_signed_response_alg' })
  idTokenSignedResponseAlg: IdTokenAlg;

  /** Seconds between pings on its notification streams; null: the instance's WS_HEARTBEAT_INTERVAL. */
  @Column('integer', { name: 'heartbeat_interval', nullable: true })
  heartbeatInterval: number | null;

  /** `none` for a public client, which has no secret (its secret_hash is null). */
  @Column('text', { name: 'token_endpoint_auth_method' })
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;

  /** Null for a public client. */
  @Column('bytea', { name: 'secret_hash', nullable: true })
  secretHash: Buffer | null;

  @Column('bytea', { name: 'previous_secret_hash', nullable: true })
  previousSecretHash: Buffer | null;

  @Column('timestamptz', { name: 'previous_secret_expires_at', nullable: true })
  previousSecretExpiresAt: Date | null;

  /** SHA-256 of its registration access token (RFC 7592), for a client registered from software; null otherwise. */
  @Column('bytea', { name: 'registration_token_hash', nullable: true })
  registrationTokenHash: Buffer | null;

  /** The client whose `clients:register` token registered it (RFC 7591); null for one the CLI or the admin API created. */
  @Column('text', { name: 'registered_by', nullable: true })
  registeredBy: string | null;

  /** Set by client:delete: the row stays as a tombstone (see ClientDeletion1795310000000). */
  @Column('timestamptz', { name: 'deleted_at', nullable: true })
  deletedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
