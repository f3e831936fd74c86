import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { AuditAction } from '../audit/admin-change.js';
import { AuditTrailService } from '../audit/audit-trail.service.js';
import { foundOr, invalidInput, notFound } from '../common/errors/app-error.js';
import { validateInput } from '../common/validation/validate-input.js';
import { Env } from '../config/env.js';
import { LOCAL_SIGN_IN } from '../identity-providers/identity-provider.entity.js';
import { IdentityProvidersService } from '../identity-providers/identity-providers.service.js';
import { SignOutsRepository } from '../grants/sign-outs.repository.js';
import { type ClientEntity, type IdTokenAlg, isPublicClient, type TokenEndpointAuthMethod } from './client.entity.js';
import { generateClientId, generateClientSecret, hashClientSecret, secretMatchesHash } from './client-secret.js';
import { ClientsRepository } from './clients.repository.js';
import { CreateClientDto } from './dto/create-client.dto.js';
import { isPostLogoutRedirectRegistered } from './post-logout-redirect.js';

/** What create takes: unset lists get create's defaults. */
export type NewClientInput = Partial<CreateClientDto> & { name?: string };

/** A confidential client just registered: its view and its secret, shown this once. */
export type CreatedClient = ClientView & { client_secret: string };

/** A client just registered: a public one has no secret, so no `client_secret` at all. */
export type RegisteredClient = ClientView & { client_secret?: string };

/** A client as operators see it: never a secret or a hash. */
export interface ClientView {
  client_id: string;
  name: string;
  grants: string[];
  redirect_patterns: string[];
  scopes: string[];
  /** What the approval page shows for each scope instead of its name. */
  scope_descriptions: Record<string, string>;
  /** How its users sign in: `local` and/or identity provider names. */
  sign_in_methods: string[];
  enabled: boolean;
  /** RFC 7591 §2: `none` for a public client (no secret, PKCE required), else `client_secret_basic` (`client_secret_post` accepted too). */
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  /** Where RP-initiated logout may send the browser back to. */
  post_logout_redirect_uris: string[];
  /** What its ID tokens are signed with. */
  id_token_signed_response_alg: IdTokenAlg;
  /** Seconds between pings on its notification streams; null: the instance's WS_HEARTBEAT_INTERVAL. */
  heartbeat_interval: number | null;
  created_at: string;
  updated_at: string;
  previous_secret_expires_at: string | null;
}

/** What client:update may change; a list given replaces the stored one. */
export interface ClientUpdate {
  name?: string;
  grants?: string[];
  redirectPatterns?: string[];
  scopes?: string[];
  /** Set for each scope named, removed for each one given null; others keep theirs. */
  scopeDescriptions?: Record<string, string | null>;
  /** `local` and/or registered identity provider names. */
  signIn?: string[];
  postLogoutRedirectUris?: string[];
  idTokenSignedResponseAlg?: string;
  /** Seconds; null goes back to the instance's WS_HEARTBEAT_INTERVAL (a string is refused). */
  heartbeatInterval?: number | string | null;
  /** Between the two secret methods only: whether a client is public never changes (see update). */
  tokenEndpointAuthMethod?: string;
}

/** What client:delete reports. */
export interface DeletedClient {
  client_id: string;
  name: string;
  deleted_at: string;
  revoked_grants: number;
}

/** Why a client cannot become public, or confidential, after it was registered. */
export const PUBLIC_IS_FIXED = 'whether a client is public cannot change: register a new client instead';

export const DEFAULT_GRANTS = ['authorization_code', 'refresh_token'] as const;

@Injectable()
export class ClientsService {
  constructor(
    private readonly clients: ClientsRepository,
    private readonly env: Env,
    private readonly signOuts: SignOutsRepository,
    private readonly identityProviders: IdentityProvidersService,
    private readonly audit: AuditTrailService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** Registers a client; the returned secret (a confidential client's) is the only copy there will ever be. */
  async create(input: NewClientInput & { tokenEndpointAuthMethod?: 'client_secret_basic' }): Promise<CreatedClient>;
  async create(input: NewClientInput): Promise<RegisteredClient>;
  async create(input: NewClientInput): Promise<RegisteredClient> {
    const [created] = await this.createAll([await this.checkNew(input)]);
    return created;
  }

  /** A new client's settings, defaulted and checked by the rules of create; throws invalid_input. */
  async checkNew(input: NewClientInput): Promise<CreateClientDto> {
    const grants = input.grants?.length ? input.grants : [...DEFAULT_GRANTS];
    const dto = await validateInput(CreateClientDto, {
      name: input.name,
      grants,
      redirectPatterns: input.redirectPatterns ?? [],
      // A client-credentials client without explicit scopes may use the default one.
      scopes: input.scopes?.length ? input.scopes : grants.includes('client_credentials') ? [this.env.DEFAULT_CLIENT_SCOPE] : [],
      scopeDescriptions: input.scopeDescriptions ?? {},
      signIn: input.signIn?.length ? input.signIn : [LOCAL_SIGN_IN],
      tokenEndpointAuthMethod: input.tokenEndpointAuthMethod ?? 'client_secret_basic',
      postLogoutRedirectUris: input.postLogoutRedirectUris ?? [],
      idTokenSignedResponseAlg: input.idTokenSignedResponseAlg ?? 'RS256',
      heartbeatInterval: input.heartbeatInterval ?? null,
    });
    assertGrantsFitType(dto.tokenEndpointAuthMethod, dto.grants);
    await this.identityProviders.checkSignInMethods(dto.signIn);
    return dto;
  }

  /** Registers every client (checked by checkNew) in one transaction: all of them, or none. */
  createAll(clients: CreateClientDto[]): Promise<RegisteredClient[]> {
    return this.insert(clients, 'client.created', { registrationTokenHash: null, registeredBy: null });
  }

  /**
   * Registers a client from software (RFC 7591): as createAll, with the hash of its registration
   * access token and the client that registered it; `admit` runs first in the transaction and
   * may refuse (a burst of registrations by one caller).
   */
  async register(
    client: CreateClientDto,
    registration: { registrationTokenHash: Buffer; registeredBy: string },
    admit: (manager: EntityManager, clients: ClientsRepository) => Promise<void>,
  ): Promise<RegisteredClient> {
    const [registered] = await this.insert([client], 'client.registered', registration, admit);
    return registered;
  }

  private async insert(
    clients: CreateClientDto[],
    action: AuditAction,
    registration: Pick<ClientEntity, 'registrationTokenHash' | 'registeredBy'>,
    admit?: (manager: EntityManager, clients: ClientsRepository) => Promise<void>,
  ): Promise<RegisteredClient[]> {
    // A public client gets no secret at all (RFC 6749 §2.1: it could not keep one).
    const secrets = clients.map((dto) => (dto.tokenEndpointAuthMethod === 'none' ? null : generateClientSecret()));
    const inserted = await this.dataSource.transaction(async (manager) => {
      await admit?.(manager, this.clients);
      const rows = await this.clients.insertAll(
        manager,
        clients.map((dto, index) => ({
          id: generateClientId(),
          name: dto.name,
          grants: dto.grants,
          redirectPatterns: dto.redirectPatterns,
          scopes: dto.scopes,
          scopeDescriptions: dto.scopeDescriptions,
          signIn: dto.signIn,
          enabled: true,
          tokenEndpointAuthMethod: dto.tokenEndpointAuthMethod,
          postLogoutRedirectUris: dto.postLogoutRedirectUris,
          idTokenSignedResponseAlg: dto.idTokenSignedResponseAlg,
          heartbeatInterval: dto.heartbeatInterval,
          secretHash: secrets[index] === null ? null : hashClientSecret(secrets[index]),
          previousSecretHash: null,
          previousSecretExpiresAt: null,
          deletedAt: null,
          ...registration,
        })),
      );
      for (const client of rows) {
        await this.audit.record(manager, {
          action,
          clientId: client.id,
          details: { name: client.name, grants: client.grants, scopes: client.scopes, token_endpoint_auth_method: client.tokenEndpointAuthMethod },
        });
      }
      return rows;
    });
    return inserted.map((client, index) => {
      const secret = secrets[index];
      return secret === null ? toView(client) : { ...toView(client), client_secret: secret };
    });
  }

  /** A page of live clients, by id (the admin API's list). */
  async page(after: string | undefined, limit: number): Promise<ClientView[]> {
    return (await this.clients.page(after, limit)).map(toView);
  }

  async list(): Promise<ClientView[]> {
    return (await this.clients.list()).map(toView);
  }

  async show(id: string): Promise<ClientView> {
    return toView(await this.require(id));
  }

  /** New secret now; the previous one keeps working for CLIENT_SECRET_OVERLAP seconds. */
  async rotateSecret(id: string): Promise<CreatedClient> {
    const current = await this.require(id);
    if (isPublicClient(current)) throw invalidInput('a public client has no secret to rotate (token_endpoint_auth_method none)');
    const secret = generateClientSecret();
    const client = await this.clients.update(id, {
      secretHash: hashClientSecret(secret),
      previousSecretHash: current.secretHash,
      // By PostgreSQL's clock, like every expiry (see ClientsRepository.acceptsPreviousSecret).
      previousSecretExpiresAt: () => `now() + make_interval(secs => ${this.env.CLIENT_SECRET_OVERLAP})`,
    }, this.recorded('client.secret_rotated'));
    return { ...toView(client ?? current), client_secret: secret };
  }

  async setEnabled(id: string, enabled: boolean): Promise<ClientView> {
    return toView(foundOr(await this.clients.update(id, { enabled }, this.recorded(enabled ? 'client.enabled' : 'client.disabled')), `no client with id "${id}"`));
  }

  /**
   * Changes what is given, checked by the rules of create (only the fields given, so a client
   * registered under older rules can still be renamed). Every instance drops its cached copy, so
   * a grant, redirect or scope taken away is refused from the next request on.
   */
  async update(id: string, update: ClientUpdate): Promise<ClientView> {
    const { scopeDescriptions, ...given } = Object.fromEntries(Object.entries(update).filter(([, value]) => value !== undefined)) as ClientUpdate;
    const current = given.tokenEndpointAuthMethod === undefined ? null : await this.require(id);
    if (current && (given.tokenEndpointAuthMethod === 'none') !== isPublicClient(current)) {
      throw invalidInput(PUBLIC_IS_FIXED);
    }
    if (Object.keys(given).length === 0 && !scopeDescriptions) {
      throw invalidInput('nothing to change: give --name, --grant, --redirect, --scope, --scope-description, --sign-in, --post-logout-redirect, --id-token-alg or --heartbeat');
    }
    if (given.grants?.length === 0) throw invalidInput('a client needs at least one grant');
    const dto = await validateInput(CreateClientDto, given, { whitelist: true, forbidNonWhitelisted: true, skipMissingProperties: true });
    if (given.grants) assertGrantsFitType((await this.require(id)).tokenEndpointAuthMethod, dto.grants);
    if (given.signIn) await this.identityProviders.checkSignInMethods(dto.signIn);
    const client = await this.clients.update(id, {
      ...(given.name !== undefined ? { name: dto.name } : {}),
      ...(given.grants ? { grants: dto.grants } : {}),
      ...(given.redirectPatterns ? { redirectPatterns: dto.redirectPatterns } : {}),
      ...(given.scopes ? { scopes: dto.scopes } : {}),
      ...(given.signIn ? { signIn: dto.signIn } : {}),
      ...(given.postLogoutRedirectUris ? { postLogoutRedirectUris: dto.postLogoutRedirectUris } : {}),
      ...(given.idTokenSignedResponseAlg !== undefined ? { idTokenSignedResponseAlg: dto.idTokenSignedResponseAlg } : {}),
      ...(given.heartbeatInterval !== undefined ? { heartbeatInterval: dto.heartbeatInterval } : {}),
      ...(given.tokenEndpointAuthMethod !== undefined ? { tokenEndpointAuthMethod: dto.tokenEndpointAuthMethod } : {}),
      ...(scopeDescriptions || given.scopes ? { scopeDescriptions: await this.describedScopes(id, scopeDescriptions ?? {}, given.scopes) } : {}),
    }, this.recorded('client.updated', { changed: [...Object.keys(given), ...(scopeDescriptions ? ['scopeDescriptions'] : [])] }));
    return toView(foundOr(client, `no client with id "${id}"`));
  }

  /**
   * The descriptions after an update: the stored ones with `changes` applied, for the scopes the
   * client will have (a scope taken away loses its description). Each one set is checked against those scopes.
   */
  private async describedScopes(id: string, changes: Record<string, string | null>, newScopes?: string[]): Promise<Record<string, string>> {
    const current = await this.require(id);
    const scopes = newScopes ?? current.scopes;
    const set = Object.fromEntries(Object.entries(changes).filter(([, text]) => text !== null));
    await validateInput(CreateClientDto, { scopes, scopeDescriptions: set }, { skipMissingProperties: true });
    const merged = { ...current.scopeDescriptions, ...changes };
    return Object.fromEntries(Object.entries(merged).filter((entry): entry is [string, string] => entry[1] !== null && scopes.includes(entry[0])));
  }

  /**
   * Deletes the client for good: its grants are revoked (their tokens refused, its streams closed
   * on every instance) and its record kept only as a tombstone nobody can use, in one transaction.
   */
  async delete(id: string): Promise<DeletedClient> {
    const deleted = await this.dataSource.transaction(async (manager) => {
      const tombstone = await this.clients.tombstone(manager, id);
      if (!tombstone) return null;
      const revokedGrants = await this.signOuts.signOut(manager, { clientId: id });
      await this.audit.record(manager, { action: 'client.deleted', clientId: id, details: { name: tombstone.name, revoked_grants: revokedGrants } });
      return { ...tombstone, revokedGrants };
    });
    this.clients.forget(id);
    if (!deleted) throw notFound(`no client with id "${id}"`);
    return { client_id: id, name: deleted.name, deleted_at: deleted.deleted_at.toISOString(), revoked_grants: deleted.revokedGrants };
  }

  /**
   * The client `id` when `token` is its registration access token (RFC 7592), compared in constant
   * time; null otherwise: unknown, deleted, registered by the CLI, or another client's token.
   */
  async findByRegistrationToken(id: string, token: string): Promise<ClientEntity | null> {
    const client = await this.clients.findById(id);
    const hash = client?.registrationTokenHash;
    return hash && secretMatchesHash(token, hash) ? client : null;
  }

  /** The client `id` unless it was deleted, enabled or not. */
  find(id: string): Promise<ClientEntity | null> {
    return this.clients.findById(id);
  }

  /** The client `id` when it exists and is enabled. */
  async findEnabled(id: string): Promise<ClientEntity | null> {
    const client = await this.clients.findById(id);
    return client?.enabled ? client : null;
  }

  /**
   * The enabled client `id` when `secret` is its current secret or a previous one still in its
   * overlap; null otherwise. Both hashes are always compared, so timing tells nothing.
   */
  async authenticate(id: string, secret: string): Promise<ClientEntity | null> {
    const checked = await this.checkSecret(id, secret);
    return 'refused' in checked ? null : checked.client;
  }

  /**
   * As `authenticate`, saying why a client is refused (a deleted client is unknown). A public
   * client has no secret, so one sent for it is refused: it leaked from somewhere, or the caller
   * mistakes the client for a confidential one.
   */
  async checkSecret(id: string, secret: string): Promise<{ client: ClientEntity } | { refused: 'unknown_client' | 'wrong_secret' | 'disabled_client' | 'public_client_sent_secret' }> {
    const client = await this.clients.findById(id);
    if (!client) return { refused: 'unknown_client' };
    if (client.secretHash === null) return { refused: 'public_client_sent_secret' };
    const current = secretMatchesHash(secret, client.secretHash);
    const previous = client.previousSecretHash !== null && secretMatchesHash(secret, client.previousSecretHash) && this.clients.acceptsPreviousSecret(client);
    if (!current && !previous) return { refused: 'wrong_secret' };
    return client.enabled ? { client } : { refused: 'disabled_client' };
  }

  /**
   * The public client `id` when it exists and is enabled, for a request that names it with
   * `client_id` alone (token_endpoint_auth_method `none`); why not, otherwise. A confidential client
   * named so is `confidential_client`: it must send its secret.
   */
  async checkPublic(id: string): Promise<{ client: ClientEntity } | { refused: 'unknown_client' | 'confidential_client' | 'disabled_client' }> {
    const client = await this.clients.findById(id);
    if (!client) return { refused: 'unknown_client' };
    if (!isPublicClient(client)) return { refused: 'confidential_client' };
    return client.enabled ? { client } : { refused: 'disabled_client' };
  }

  /**
   * Whether RP-initiated logout may send the browser to `url` for this client: one of its
   * `post_logout_redirect_uris`, exactly, after both are parsed and serialised as URLs (scheme and
   * host lowercase, default port dropped, an empty path is `/`); a malformed `url` is never allowed.
   */
  isPostLogoutRedirectAllowed(client: ClientEntity, url: string): boolean {
    return isPostLogoutRedirectRegistered(url, client.postLogoutRedirectUris);
  }

  /** The audit trail's record of a change to one client, for ClientsRepository.update to write beside it. */
  private recorded(action: AuditAction, details: Record<string, string[]> = {}) {
    return (manager: EntityManager, client: ClientEntity) => this.audit.record(manager, { action, clientId: client.id, details: { name: client.name, ...details } });
  }

  private async require(id: string): Promise<ClientEntity> {
    return foundOr(await this.clients.findById(id), `no client with id "${id}"`);
  }
}

function toView(client: ClientEntity): ClientView {
  return {
    client_id: client.id,
    name: client.name,
    grants: client.grants,
    redirect_patterns: client.redirectPatterns,
    scopes: client.scopes,
    scope_descriptions: client.scopeDescriptions,
    sign_in_methods: client.signIn,
    enabled: client.enabled,
    token_endpoint_auth_method: client.tokenEndpointAuthMethod,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    id_token_signed_response_alg: client.idTokenSignedResponseAlg,
    heartbeat_interval: client.heartbeatInterval,
    created_at: client.createdAt.toISOString(),
    updated_at: client.updatedAt.toISOString(),
    previous_secret_expires_at: client.previousSecretExpiresAt?.toISOString() ?? null,
  };
}

/** client_credentials authenticates the client itself, which a public client cannot do. */
function assertGrantsFitType(method: TokenEndpointAuthMethod, grants: readonly string[]): void {
  if (method === 'none' && grants.includes('client_credentials')) {
    throw invalidInput('a public client cannot use client_credentials: that grant authenticates the client itself, and a public client has no secret');
  }
}
