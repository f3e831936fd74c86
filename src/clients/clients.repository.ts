import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { conflict, isUniqueViolation } from '../common/errors/app-error.js';
import { PgListener } from '../database/pg-listener.service.js';
import { ClientEntity } from './client.entity.js';
import { isPlausibleClientId } from './client-secret.js';

/** NOTIFY channel telling every instance that a client changed (its payload is the client id). */
export const CLIENT_CHANGED_CHANNEL = 'vc_client_changed';

/** A cached client is re-read at least this often, even if a change notification were lost. */
const CACHE_TTL_MS = 30_000;

@Injectable()
export class ClientsRepository {
  /**
   * Client records by id: every token request and stream upgrade authenticates a client, and a
   * database round trip each would cap those routes. A change anywhere (this process, the CLI,
   * another instance) NOTIFYs every process, which drops its copy; after the listener
   * reconnects, everything is dropped.
   */
  private readonly cache = new Map<string, { client: ClientEntity; loadedAt: number }>();
  /**
   * Bumped by every invalidation. A read that was in flight when one happened may hold the row
   * as it was before the change, so it is returned but not cached.
   */
  private generation = 0;

  constructor(
    @InjectRepository(ClientEntity) private readonly clients: Repository<ClientEntity>,
    listener: PgListener,
  ) {
    listener.on(CLIENT_CHANGED_CHANNEL, (id) => this.forget(id));
    listener.onResume(() => this.forget());
  }

  async insert(client: Omit<ClientEntity, 'createdAt' | 'updatedAt'>): Promise<ClientEntity> {
    try {
      await this.clients.insert(client);
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`a client named "${client.name}" already exists`);
      throw error;
    }
    return this.clients.findOneByOrFail({ id: client.id });
  }

  async findById(id: string): Promise<ClientEntity | null> {
    if (!isPlausibleClientId(id)) return null;
    const cached = this.cache.get(id);
    if (cached && Date.now() - cached.loadedAt < CACHE_TTL_MS) return cached.client;
    const generation = this.generation;
    const client = await this.clients.findOneBy({ id });
    if (client && generation === this.generation) this.cache.set(id, { client, loadedAt: Date.now() });
    else if (!client) this.cache.delete(id);
    return client;
  }

  list(): Promise<ClientEntity[]> {
    return this.clients.find({ order: { createdAt: 'ASC' } });
  }

  /**
   * Updates the given columns and returns the new row, or null when no client has this id. Every
   * instance hears of it (the gateway closes a disabled client's streams).
   */
  async update(id: string, changes: Partial<Pick<ClientEntity, 'enabled' | 'secretHash' | 'previousSecretHash' | 'previousSecretExpiresAt'>>) {
    const updated = await this.clients.manager.transaction(async (manager) => {
      const result = await manager.update(ClientEntity, { id }, changes);
      if (!result.affected) return null;
      await manager.query('SELECT pg_notify($1, $2)', [CLIENT_CHANGED_CHANNEL, id]);
      return manager.findOneByOrFail(ClientEntity, { id });
    });
    // This process drops its copy at once; the others when the notification arrives.
    this.forget(id);
    return updated;
  }

  /** Drops one client's copy, or all of them. */
  private forget(id?: string): void {
    this.generation++;
    if (id === undefined) this.cache.clear();
    else this.cache.delete(id);
  }
}
