import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { AuditAction } from '../audit/admin-change.js';
import { AuditTrailService } from '../audit/audit-trail.service.js';
import { conflict, foundOr, invalidInput, isUniqueViolation } from '../common/errors/app-error.js';
import { CONTROL } from '../common/validation/storable-text.js';
import { validateInput } from '../common/validation/validate-input.js';
import { Env } from '../config/env.js';
import { DEFAULT_IDP_SCOPES, IDP_NAME, IdentityProviderChangesDto, NewIdentityProviderDto } from './dto/identity-provider-input.dto.js';
import { IdentityProviderEntity, LOCAL_SIGN_IN, secretContext } from './identity-provider.entity.js';
import { isLoopback, UpstreamClientsService } from './upstream-clients.service.js';
import { UpstreamFailure } from './upstream-failure.js';
import { UPSTREAM_NEEDS_KEK, UpstreamVaultService } from './upstream-vault.service.js';

/** A provider as operators see it: never its secret. */
export interface IdentityProviderView {
  name: string;
  issuer: string;
  client_id: string;
  /** To be registered at the provider. */
  redirect_uri: string;
  mode: string;
  scopes: string[];
  display_name: string;
  /** Whether its brokered users' `email_verified` is passed on (else false). */
  trust_email: boolean;
}

export interface NewIdentityProvider {
  name?: string;
  issuer?: string;
  clientId?: string;
  displayName?: string;
  scopes?: string[];
  mode?: string;
  trustEmail?: boolean;
}

export type IdentityProviderChanges = Omit<NewIdentityProvider, 'name' | 'issuer'>;

const SECRET_MAX_LENGTH = 1000;

/** The registry of upstream identity providers (idp:* commands). */
@Injectable()
export class IdentityProvidersService {
  constructor(
    @InjectRepository(IdentityProviderEntity) private readonly providers: Repository<IdentityProviderEntity>,
    private readonly upstream: UpstreamClientsService,
    private readonly vault: UpstreamVaultService,
    private readonly env: Env,
    private readonly audit: AuditTrailService,
  ) {}

  /**
   * Registers a provider once its discovery document has been fetched and checked; `secret` null
   * (or empty) makes a public client, which signs in with PKCE only.
   */
  async create(input: NewIdentityProvider, secret: string | null): Promise<IdentityProviderView> {
    const dto = await validateInput(NewIdentityProviderDto, { scopes: DEFAULT_IDP_SCOPES, mode: 'broker', trustEmail: false, ...withoutUndefined(input) });
    const issuer = checkIssuer(dto.issuer);
    const clientSecret = checkSecret(secret);
    if (!this.vault.available) throw invalidInput(UPSTREAM_NEEDS_KEK);
    if (await this.providers.existsBy({ name: dto.name })) throw conflict(`an identity provider named "${dto.name}" already exists`);
    await this.checkDiscovery(issuer, dto.clientId, clientSecret);
    const provider = this.providers.create({
      name: dto.name,
      issuer,
      clientId: dto.clientId,
      clientSecretSealed: clientSecret === null ? null : this.vault.seal(secretContext(dto.name), clientSecret),
      displayName: dto.displayName ?? dto.name,
      scopes: ensureOpenid(dto.scopes!),
      mode: dto.mode!,
      trustEmail: dto.trustEmail!,
    });
    try {
      await this.providers.manager.transaction(async (manager) => {
        await manager.insert(IdentityProviderEntity, provider);
        await this.audit.record(manager, { action: 'idp.created', target: provider.name, details: { issuer, mode: provider.mode } });
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`an identity provider named "${dto.name}" already exists`);
      throw error;
    }
    return this.toView(provider);
  }

  async list(): Promise<IdentityProviderView[]> {
    return (await this.providers.find({ order: { name: 'ASC' } })).map((provider) => this.toView(provider));
  }

  async show(name: string): Promise<IdentityProviderView> {
    return this.toView(await this.require(name));
  }

  async update(name: string, input: IdentityProviderChanges): Promise<IdentityProviderView> {
    const provider = await this.require(name);
    const changes = await validateInput(IdentityProviderChangesDto, withoutUndefined(input));
    if (changes.clientId !== undefined) provider.clientId = changes.clientId;
    if (changes.displayName !== undefined) provider.displayName = changes.displayName;
    if (changes.scopes !== undefined) provider.scopes = ensureOpenid(changes.scopes);
    if (changes.mode !== undefined) provider.mode = changes.mode;
    if (changes.trustEmail !== undefined) provider.trustEmail = changes.trustEmail;
    return this.toView(await this.saveRecorded(provider, 'idp.updated', { changed: Object.keys(changes) }));
  }

  /** A new client secret (null or empty: none, a public client from now on). */
  async rotateSecret(name: string, secret: string | null): Promise<IdentityProviderView> {
    const provider = await this.require(name);
    const clientSecret = checkSecret(secret);
    if (!this.vault.available) throw invalidInput(UPSTREAM_NEEDS_KEK);
    provider.clientSecretSealed = clientSecret === null ? null : this.vault.seal(secretContext(name), clientSecret);
    return this.toView(await this.saveRecorded(provider, 'idp.secret_rotated', { public_client: clientSecret === null }));
  }

  /** Removes a provider no client signs in with; its brokered users stay (and can sign in again if it comes back). */
  async delete(name: string): Promise<IdentityProviderView> {
    const provider = await this.require(name);
    const users: { id: string; name: string }[] = await this.providers.query(
      'SELECT id, name FROM clients WHERE $1 = ANY (sign_in) AND deleted_at IS NULL ORDER BY created_at, id',
      [name],
    );
    if (users.length > 0) {
      const named = users.map((client) => `${client.name} (${client.id})`).join(', ');
      throw conflict(`identity provider "${name}" is a sign-in method of ${users.length === 1 ? 'a client' : `${users.length} clients`}: ${named}; change their --sign-in first`);
    }
    await this.providers.manager.transaction(async (manager) => {
      await manager.delete(IdentityProviderEntity, { name });
      await this.audit.record(manager, { action: 'idp.deleted', target: name, details: { issuer: provider.issuer } });
    });
    return this.toView(provider);
  }

  private saveRecorded(provider: IdentityProviderEntity, action: AuditAction, details: Record<string, string[] | boolean>): Promise<IdentityProviderEntity> {
    return this.providers.manager.transaction(async (manager) => {
      const saved = await manager.save(provider);
      await this.audit.record(manager, { action, target: provider.name, details });
      return saved;
    });
  }

  /** The provider with this name, or null (a name no provider can have is unknown without a query). */
  find(name: string): Promise<IdentityProviderEntity | null> {
    return IDP_NAME.test(name) ? this.providers.findOneBy({ name }) : Promise.resolve(null);
  }

  /** The providers among `names`, in that order; names of no provider are left out. */
  async findAll(names: readonly string[]): Promise<IdentityProviderEntity[]> {
    const wanted = names.filter((name) => name !== LOCAL_SIGN_IN && IDP_NAME.test(name));
    if (wanted.length === 0) return [];
    const found = await this.providers.createQueryBuilder('p').where('p.name = ANY(:wanted)', { wanted }).getMany();
    return wanted.map((name) => found.find((provider) => provider.name === name)).filter((provider) => provider !== undefined);
  }

  /** Checks a client's sign-in methods: each is `local` or a registered provider. */
  async checkSignInMethods(methods: readonly string[]): Promise<void> {
    const providers = await this.findAll(methods);
    const unknown = methods.filter((method) => method !== LOCAL_SIGN_IN && !providers.some((provider) => provider.name === method));
    if (unknown.length > 0) throw invalidInput(`sign-in method must be "${LOCAL_SIGN_IN}" or a registered identity provider (idp:list); unknown: ${unknown.join(', ')}`);
  }

  callbackUrl(name: string): string {
    return `${this.env.frontendUrl}/sso/callback/${name}`;
  }

  private async require(name: string): Promise<IdentityProviderEntity> {
    return foundOr(await this.find(name), `no identity provider named "${name}"`);
  }

  private async checkDiscovery(issuer: string, clientId: string, secret: string | null): Promise<void> {
    try {
      await this.upstream.check(issuer, clientId, secret);
    } catch (error) {
      if (error instanceof UpstreamFailure) throw invalidInput(`the discovery document ${issuer.replace(/\/$/, '')}/.well-known/openid-configuration could not be used: ${error.message}`);
      throw error;
    }
  }

  private toView(provider: IdentityProviderEntity): IdentityProviderView {
    return {
      name: provider.name,
      issuer: provider.issuer,
      client_id: provider.clientId,
      redirect_uri: this.callbackUrl(provider.name),
      mode: provider.mode,
      scopes: provider.scopes,
      display_name: provider.displayName,
      trust_email: provider.trustEmail,
    };
  }
}

/** An issuer as OpenID Connect Discovery requires: https (http on loopback), no query or fragment. */
function checkIssuer(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidInput('issuer must be an absolute URL, such as https://login.example.com/realms/portal');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url))) throw invalidInput('issuer must be an https URL (plain http only on a loopback address)');
  if (url.search || url.hash || url.username || url.password) throw invalidInput('issuer must not have a query, a fragment or credentials');
  // Kept as typed: the discovery document's issuer must match it exactly (a trailing slash matters).
  return text;
}

function checkSecret(secret: string | null): string | null {
  if (secret === null || secret === '') return null;
  if (secret.length > SECRET_MAX_LENGTH) throw invalidInput(`the client secret must be at most ${SECRET_MAX_LENGTH} characters long`);
  if (CONTROL.test(secret)) throw invalidInput('the client secret must not contain control characters');
  return secret;
}

/** An OpenID sign-in always asks for `openid`. */
const ensureOpenid = (scopes: string[]) => (scopes.includes('openid') ? scopes : ['openid', ...scopes]);

const withoutUndefined = <T extends object>(input: T) => Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
