import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, IsNull, MoreThan, type QueryDeepPartialEntity, type Repository } from 'typeorm';
import { conflict, isUniqueViolation } from '../common/errors/app-error.js';
import { PgListenerService } from '../database/pg-listener.service.js';
import { ClientEntity } from './client.entity.js';
import { isPlausibleClientId } from './client-secret.js';

/** NOTIFY channel telling every instance that a client changed (its payload is the client id). */
export const CLIENT_CHANGED_CHANNEL = 'vc_client_changed';

/** A cached client is re-read at least this often, even if a change notification were lost. */
const CACHE_TTL_MS = 30_000;

/** What an operator may change on a client. */
type ClientChanges = Pick<
  ClientEntity,
  | 'name'
  | 'grants'
  | 'redirectPatterns'
  | 'scopes'
  | 'scopeDescriptions'
  | 'signIn'
  | 'enabled'
  | 'secretHash'
  | 'previousSecretHash'
  | 'previousSecretExpiresAt'
  | 'postLogoutRedirectUris'
  | 'idTokenSignedResponseAlg'
  | 'heartbeatInterval'
  | 'tokenEndpointAuthMethod'
>;

/** Tells every process, when the transaction commits, to drop its copy of the client. */
const notifyChanged = (manager: EntityManager, id: string) => manager.query('SELECT pg_notify($1, $2)', [CLIENT_CHANGED_CHANNEL, id]);

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
    listener: PgListenerService,
  ) {
    listener.on(CLIENT_CHANGED_CHANNEL, (id) => this.forget(id));
    listener.onResume(() => this.forget());
  }

  /** Inserts every client in the caller's transaction; a taken name fails the whole transaction. */
  async insertAll(manager: EntityManager, clients: Omit<ClientEntity, 'createdAt' | 'updatedAt'>[]): Promise<ClientEntity[]> {
    const inserted: ClientEntity[] = [];
    for (const client of clients) {
      try {
        await manager.insert(ClientEntity, client);
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(`a client named "${client.name}" already exists`);
        throw error;
      }
      inserted.push(await manager.findOneByOrFail(ClientEntity, { id: client.id }));
    }
    return inserted;
  }

  /**
   * How many clients `registeredBy` registered in the last `seconds`, and how long until the
   * oldest of them leaves that window, counted under a lock on `registeredBy` held until the
   * caller's transaction ends: two registrations by one client are counted one after the other.
   */
  async recentRegistrations(manager: EntityManager, registeredBy: string, seconds: number): Promise<{ count: number; oldestLeavesIn: number }> {
    await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended('client-registrations:' || $1, 0))`, [registeredBy]);
    const [row]: { count: string; leaves_in: number | null }[] = await manager.query(
      `SELECT count(*) AS count, extract(epoch FROM min(created_at) + make_interval(secs => $2) - now()) AS leaves_in
       FROM clients WHERE registered_by = $1 AND created_at > now() - make_interval(secs => $2)`,
      [registeredBy, seconds],
    );
    return { count: Number(row.count), oldestLeavesIn: Math.max(0, Number(row.leaves_in ?? 0)) };
  }

  /** Whether no client was ever created (a deleted one counts: its operator knows how). */
  async isEmpty(): Promise<boolean> {
    return !(await this.clients.exists({ withDeleted: true }));
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
      .where('client.id = :id AND client.deleted_at IS NULL', { id })
      .getRawAndEntities<{ previous_secret_left_ms: string | null }>();
    if (!client) return null;
    this.previousSecretDeadlines.set(client, performance.now() + Number(row.previous_secret_left_ms ?? 0));
    return client;
  }

  /** Live clients by id, after `after` (a page of at most `limit`). */
  page(after: string | undefined, limit: number): Promise<ClientEntity[]> {
    return this.clients.find({ where: { deletedAt: IsNull(), ...(after === undefined ? {} : { id: MoreThan(after) }) }, order: { id: 'ASC' }, take: limit });
  }

  list(): Promise<ClientEntity[]> {
    return this.clients.find({ where: { deletedAt: IsNull() }, order: { createdAt: 'ASC' } });
  }

  /**
   * Updates the given columns of a live client and returns the new row, or null when no client
   * has this id. Every instance hears of it (the gateway closes a disabled client's streams).
   * `alongside` runs in the same transaction with the new row (the audit trail's record of it).
   */
  async update(id: string, changes: QueryDeepPartialEntity<ClientChanges>, alongside?: (manager: EntityManager, client: ClientEntity) => Promise<unknown>) {
    let updated: ClientEntity | null;
    try {
      updated = await this.clients.manager.transaction(async (manager) => {
        const result = await manager.update(ClientEntity, { id, deletedAt: IsNull() }, changes);
        if (!result.affected) return null;
        await notifyChanged(manager, id);
        const client = await manager.findOneByOrFail(ClientEntity, { id });
        await alongside?.(manager, client);
        return client;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`a client named "${String(changes.name)}" already exists`);
      throw error;
    }
    // This process drops its copy at once; the others when the notification arrives.
    this.forget(id);
    return updated;
  }

  /**
   * client:delete, in the caller's transaction: the row stays as a tombstone that nothing can use
   * (no secret, no grants, no redirect URLs, disabled), found by no lookup. Null when no live client has this id.
   * The caller forgets its cached copy once the transaction has committed.
   */
  async tombstone(manager: EntityManager, id: string): Promise<{ name: string; deleted_at: Date } | null> {
    // An UPDATE answers [rows, affected count].
    const [[row]]: [{ name: string; deleted_at: Date }[], number] = await manager.query(
      // A public client has no secret to void (clients_public_has_no_secret).
      `UPDATE clients SET deleted_at = now(), updated_at = now(), enabled = false, previous_secret_hash = NULL,
         secret_hash = CASE WHEN token_endpoint_auth_method = 'none' THEN NULL ELSE '\\x'::bytea END,
         previous_secret_expires_at = NULL, grants = '{}', redirect_patterns = '{}', scopes = '{}', scope_descriptions = '{}',
         post_logout_redirect_uris = '{}', registration_token_hash = NULL
       WHERE id = $1 AND deleted_at IS NULL RETURNING name, deleted_at`,
      [id],
    );
    if (row) await notifyChanged(manager, id);
    return row ?? null;
  }

  /** Drops one client's copy, or all of them. */
  forget(id?: string): void {
    this.generation++;
    if (id === undefined) this.cache.clear();
    else this.cache.delete(id);
  }
}
