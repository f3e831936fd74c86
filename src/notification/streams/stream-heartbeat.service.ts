import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ClientsService } from '../../clients/clients.service.js';
import { Env } from '../../config/env.js';
import { isDatabaseUnavailable } from '../../common/errors/database-unavailable.js';
import { PgListenerService } from '../../database/pg-listener.service.js';
import { ConnectionRegistryService } from './connection-registry.service.js';
import { NotificationListenerService } from '../delivery/notification-listener.service.js';

const TICK_MS = 1_000;

/**
 * The stream's heartbeat: each connection is pinged every `heartbeat` seconds, its client's own
 * (`client:update --heartbeat`) or WS_HEARTBEAT_INTERVAL, and a connection that has not answered
 * the previous ping by then is dropped (terminated: a dead link would not answer a close either).
 *
 * One timer for every connection: it ticks each second, and a connection is pinged on the ticks
 * its interval divides, so the connections of one interval are pinged together, as with one timer
 * per interval. A connection's interval is read from its client record (cached, and just read by
 * its upgrade) at the first tick after it opens, and it is pinged from then on; if that read
 * fails, it is WS_HEARTBEAT_INTERVAL until a read succeeds. A change of the client (NOTIFY
 * vc_client_changed, from any instance or the CLI) is read again at once, and the client's open
 * connections follow from the next tick on.
 */
@Injectable()
export class StreamHeartbeatService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(StreamHeartbeatService.name);
  private timer?: NodeJS.Timeout;
  private ticks = 0;
  /** Clients whose connections' interval is to be read (again). */
  private readonly stale = new Set<string>();
  private reading = false;

  constructor(
    private readonly connections: ConnectionRegistryService,
    private readonly clients: ClientsService,
    private readonly notifications: NotificationListenerService,
    private readonly listener: PgListenerService,
    private readonly env: Env,
  ) {}

  onModuleInit() {
    this.timer = setInterval(() => this.tick(), TICK_MS).unref();
    this.notifications.onClientChanged((clientId) => this.reread(clientId));
    // Changes announced while this instance was not listening were missed: every client is read again.
    this.listener.onResume(() => this.reread(...this.connections.clientIds()));
  }

  onModuleDestroy() {
    clearInterval(this.timer);
  }

  private tick() {
    this.ticks++;
    for (const connection of this.connections) {
      if (connection.heartbeat === undefined) {
        this.stale.add(connection.clientId);
        continue;
      }
      if (this.ticks % connection.heartbeat !== 0) continue;
      if (!connection.alive) {
        connection.transport.terminate();
        continue;
      }
      // An event stream cannot answer: its comment line proves nothing until a write to a vanished client fails.
      connection.alive = !connection.transport.pongs;
      connection.transport.ping();
    }
    void this.readStale();
  }

  private reread(...clientIds: string[]) {
    for (const clientId of clientIds) this.stale.add(clientId);
    void this.readStale();
  }

  /**
   * One client at a time (after a reconnection of the listener, every client with a stream here
   * is read, and must not take the pool at once); one that fails is read again at the next tick.
   */
  private async readStale(): Promise<void> {
    if (this.reading || this.stale.size === 0) return;
    this.reading = true;
    const failed: string[] = [];
    try {
      // A client added meanwhile, or again after its read began, is visited by this same loop.
      for (const clientId of this.stale) {
        this.stale.delete(clientId);
        try {
          const client = await this.clients.find(clientId);
          const seconds = client?.heartbeatInterval ?? this.env.WS_HEARTBEAT_INTERVAL;
          for (const connection of this.connections.ofClient(clientId)) connection.heartbeat = seconds;
        } catch (error) {
          if (!isDatabaseUnavailable(error)) this.logger.warn(`could not read the heartbeat of client ${clientId}: ${(error as Error).message}`);
          // Its new connections are pinged meanwhile: a dead one must not wait for the database.
          for (const connection of this.connections.ofClient(clientId)) connection.heartbeat ??= this.env.WS_HEARTBEAT_INTERVAL;
          failed.push(clientId);
        }
      }
    } finally {
      this.reading = false;
    }
    for (const clientId of failed) this.stale.add(clientId);
  }
}
