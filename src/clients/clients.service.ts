import { Injectable } from '@nestjs/common';
import { notFound } from '../common/errors/app-error.js';
import { validateInput } from '../common/validation/validate-input.js';
import { Env } from '../config/env.js';
import type { ClientEntity } from './client.entity.js';
import { generateClientId, generateClientSecret, hashClientSecret, secretMatchesHash } from './client-secret.js';
import { ClientsRepository } from './clients.repository.js';
import { CreateClientDto } from './dto/create-client.dto.js';

/** A client as operators see it: never a secret or a hash. */
export interface ClientView {
  client_id: string;
  name: string;
  grants: string[];
  redirect_patterns: string[];
  scopes: string[];
  enabled: boolean;
  created_at: string;
  updated_at: string;
  previous_secret_expires_at: string | null;
}

export const DEFAULT_GRANTS = ['authorization_code', 'refresh_token'] as const;

@Injectable()
export class ClientsService {
  constructor(
    private readonly clients: ClientsRepository,
    private readonly env: Env,
  ) {}

  /** Registers a client; the returned secret is the only copy there will ever be. */
  async create(input: Partial<CreateClientDto> & { name?: string }): Promise<ClientView & { client_secret: string }> {
    const grants = input.grants?.length ? input.grants : [...DEFAULT_GRANTS];
    const dto = await validateInput(CreateClientDto, {
      name: input.name,
      grants,
      redirectPatterns: input.redirectPatterns ?? [],
      // A client-credentials client without explicit scopes may use the default one.
      scopes: input.scopes?.length ? input.scopes : grants.includes('client_credentials') ? [this.env.DEFAULT_CLIENT_SCOPE] : [],
    });
    const secret = generateClientSecret();
    const client = await this.clients.insert({
      id: generateClientId(),
      name: dto.name,
      grants: dto.grants,
      redirectPatterns: dto.redirectPatterns,
      scopes: dto.scopes,
      enabled: true,
      secretHash: hashClientSecret(secret),
      previousSecretHash: null,
      previousSecretExpiresAt: null,
    });
    return { ...toView(client), client_secret: secret };
  }

  async list(): Promise<ClientView[]> {
    return (await this.clients.list()).map(toView);
  }

  async show(id: string): Promise<ClientView> {
    return toView(await this.require(id));
  }

  /** New secret now; the previous one keeps working for CLIENT_SECRET_OVERLAP seconds. */
  async rotateSecret(id: string): Promise<ClientView & { client_secret: string }> {
    const current = await this.require(id);
    const secret = generateClientSecret();
    const client = await this.clients.update(id, {
      secretHash: hashClientSecret(secret),
      previousSecretHash: current.secretHash,
      // By PostgreSQL's clock, like every expiry (see ClientsRepository.acceptsPreviousSecret).
      previousSecretExpiresAt: () => `now() + make_interval(secs => ${this.env.CLIENT_SECRET_OVERLAP})`,
    });
    return { ...toView(client ?? current), client_secret: secret };
  }

  async setEnabled(id: string, enabled: boolean): Promise<ClientView> {
    const client = await this.clients.update(id, { enabled });
    if (!client) throw notFound(`no client with id "${id}"`);
    return toView(client);
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
    const client = await this.clients.findById(id);
    if (!client) return null;
    const current = secretMatchesHash(secret, client.secretHash);
    const previous = client.previousSecretHash !== null && secretMatchesHash(secret, client.previousSecretHash) && this.clients.acceptsPreviousSecret(client);
    return client.enabled && (current || previous) ? client : null;
  }

  private async require(id: string): Promise<ClientEntity> {
    const client = await this.clients.findById(id);
    if (!client) throw notFound(`no client with id "${id}"`);
    return client;
  }
}

function toView(client: ClientEntity): ClientView {
  return {
    client_id: client.id,
    name: client.name,
    grants: client.grants,
    redirect_patterns: client.redirectPatterns,
    scopes: client.scopes,
    enabled: client.enabled,
    created_at: client.createdAt.toISOString(),
    updated_at: client.updatedAt.toISOString(),
    previous_secret_expires_at: client.previousSecretExpiresAt?.toISOString() ?? null,
  };
}
