import type { IncomingMessage } from 'node:http';
import { Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { type OnGatewayConnection, WebSocketGateway } from '@nestjs/websockets';
import type { WebSocket } from 'ws';
import { ClientsService } from '../clients/clients.service.js';
import { Env } from '../config/env.js';
import { isDatabaseUnavailable } from '../database/database-unavailable.js';
import { Metrics } from '../metrics/metrics.service.js';
import { DeliveryService, type Subscriber } from './delivery.service.js';
import { NotificationListener } from './notification-listener.service.js';
import { tokenOfUpgrade } from './notification-ws.adapter.js';

/** Seed 001 close codes. */
export const CLOSE_AT_CAPACITY = 1008;
export const CLOSE_TOKEN_EXPIRED = 4003;
/** A disabled client's streams end with a policy violation; reconnecting then fails with 401. */
export const CLOSE_CLIENT_DISABLED = 1008;
/** RFC 6455 §7.4.1 "try again later": the database could not be reached to start the delivery. */
export const CLOSE_TRY_AGAIN_LATER = 1013;

interface Connection {
  socket: WebSocket;
  clientId: string;
  alive: boolean;
  expiry: NodeJS.Timeout;
  subscriber?: Subscriber;
}

/**
 * GET /voyage/notification/v1/ws/products: the token was verified during the upgrade; here the
 * connection gets its capacity check, its 4003 timer at the token's expiry, the heartbeat, and
 * its notifications (replay first, then live).
 */
@WebSocketGateway({ path: '/voyage/notification/v1/ws/products' })
export class NotificationGateway implements OnGatewayConnection, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(NotificationGateway.name);
  private readonly connections = new Set<Connection>();
  private heartbeat?: NodeJS.Timeout;

  constructor(
    private readonly delivery: DeliveryService,
    private readonly clients: ClientsService,
    private readonly listener: NotificationListener,
    private readonly env: Env,
    private readonly metrics: Metrics,
  ) {}

  onModuleInit() {
    this.heartbeat = setInterval(() => this.beat(), this.env.WS_HEARTBEAT_INTERVAL * 1000).unref();
    this.listener.onClientChanged((clientId) => {
      // A failed check must not become an unhandled rejection (which ends the process).
      this.closeIfDisabled(clientId).catch((error) => this.logger.warn(`could not check client ${clientId}: ${(error as Error).message}`));
    });
  }

  onModuleDestroy() {
    clearInterval(this.heartbeat);
  }

  get openConnections(): number {
    return this.connections.size;
  }

  async handleConnection(socket: WebSocket, request: IncomingMessage): Promise<void> {
    const token = tokenOfUpgrade(request);
    socket.once('close', (code) => this.metrics.wsCloses.inc({ code }));
    if (this.connections.size >= this.env.WS_MAX_CONNECTIONS) {
      socket.close(CLOSE_AT_CAPACITY, 'server at capacity: reconnect later');
      return;
    }
    const expiry = setTimeout(() => socket.close(CLOSE_TOKEN_EXPIRED, 'token expired'), Math.max(token.exp * 1000 - Date.now(), 0));
    this.metrics.wsConnects.inc();
    const connection: Connection = { socket, clientId: token.client_id, alive: true, expiry };
    this.connections.add(connection);
    socket.on('pong', () => (connection.alive = true));
    socket.once('close', () => {
      clearTimeout(expiry);
      this.connections.delete(connection);
      if (connection.subscriber) this.delivery.unsubscribe(connection.subscriber);
    });
    try {
      const subscriber = await this.delivery.subscribe(token.client_id, socket);
      // The socket may have closed while the cursor was read.
      if (this.connections.has(connection)) connection.subscriber = subscriber;
      else this.delivery.unsubscribe(subscriber);
    } catch (error) {
      // The cursor could not be read (the database is away or busy): the client reconnects and resumes.
      if (isDatabaseUnavailable(error)) return socket.close(CLOSE_TRY_AGAIN_LATER, 'service unavailable: reconnect later');
      this.logger.warn(`could not start delivery: ${(error as Error).message}`);
      socket.close(1011, 'internal error');
    }
  }

  /** A connection that did not answer the previous ping is gone. */
  private beat() {
    for (const connection of this.connections) {
      if (!connection.alive) {
        connection.socket.terminate();
        continue;
      }
      connection.alive = false;
      connection.socket.ping();
    }
  }

  /**
   * Every connection of the client, including one whose delivery has not started yet (its cursor
   * is still being read), and one whose upgrade was authorized while this check was running:
   * the connections are looked up after the check, not before.
   */
  private async closeIfDisabled(clientId: string) {
    if (await this.clients.findEnabled(clientId)) return;
    for (const connection of this.connections) {
      if (connection.clientId === clientId) connection.socket.close(CLOSE_CLIENT_DISABLED, 'client disabled');
    }
  }
}
