import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { QueryDeepPartialEntity, Repository } from 'typeorm';
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
  /**
   * When each loaded client's previous secret stops working, on this process's monotonic clock:
   * PostgreSQL says how long it has left when the row is read, so instances whose wall clocks
   * disagree still agree on the end of the overlap.
   */
  private readonly previousSecretDeadlines = new WeakMap<ClientEntity, number>();

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
    const client = await this.load(id);
    if (client && generation === this.generation) this.cache.set(id, { client, loadedAt: Date.now() });
    else if (!client) this.cache.delete(id);
    return client;
  }

  /** Whether a client returned by findById still accepts its previous secret. */
  acceptsPreviousSecret(client: ClientEntity): boolean {
    return client.previousSecretHash !== null && (this.previousSecretDeadlines.get(client) ?? 0) > performance.now();
  }

  private async load(id: string): Promise<ClientEntity | null> {
    const {
      entities: [client],
      raw: [row],
    } = await this.clients
      .createQueryBuilder('client')
      .addSelect('extract(epoch FROM client.previous_secret_expires_at - now()) * 1000', 'previous_secret_left_ms')
      .where('client.id = :id', { id })
      .getRawAndEntities<{ previous_secret_left_ms: string | null }>();
    if (!client) return null;
    this.previousSecretDeadlines.set(client, performance.now() + Number(row.previous_secret_left_ms ?? 0));
    return client;
  }

  list(): Promise<ClientEntity[]> {
    return this.clients.find({ order: { createdAt: 'ASC' } });
  }

  /**
   * Updates the given columns and returns the new row, or null when no client has this id. Every
   * instance hears of it (the gateway closes a disabled client's streams).
   */
  async update(id: string, changes: QueryDeepPartialEntity<Pick<ClientEntity, 'enabled' | 'secretHash' | 'previousSecretHash' | 'previousSecretExpiresAt'>>) {
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
