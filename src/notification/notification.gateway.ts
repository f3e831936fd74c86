import type { IncomingMessage } from 'node:http';
import { Logger } from '@nestjs/common';
import { type OnGatewayConnection, WebSocketGateway } from '@nestjs/websockets';
import type { WebSocket } from 'ws';
import { Env } from '../config/env.js';
import { isDatabaseUnavailable } from '../database/database-unavailable.js';
import { Metrics } from '../metrics/metrics.service.js';
import { ConnectionRegistry, type StreamConnection } from './connection-registry.js';
import { DeliveryService } from './delivery.service.js';
import { tokenOfUpgrade } from './notification-ws.adapter.js';
import { StreamAuthorizer } from './stream-authorizer.js';
import { CLOSE_REVOKED } from './stream-revocations.js';

/** The notification stream's close codes. */
export const CLOSE_AT_CAPACITY = 1008;
export const CLOSE_TOKEN_EXPIRED = 4003;
/** RFC 6455 §7.4.1 "try again later": the delivery could not be started (the database is away or busy, or it took too long). */
export const CLOSE_TRY_AGAIN_LATER = 1013;
const START_FAILED = 'service unavailable: reconnect later';

/**
 * GET /voyage/notification/v1/ws/products: the token was verified during the upgrade; here the
 * connection gets its capacity checks (the instance's, and one client's share of it), its 4003
 * timer at the token's expiry, the heartbeat, and its notifications (replay first, then live).
 *
 * Once registered, a stream is found by every revocation (StreamRevocations); a revocation that
 * arrived while it was being let in is caught by asking the upgrade's check again right after.
 *
 * A stream is never open without a delivery position: its start (that check, the cursor read and
 * the take-over of a hold) either completes within REQUEST_TIMEOUT_MS, or the stream is closed
 * with 1013 and the client reconnects and resumes from its cursor. A start that completes after
 * its stream was closed leaves the hold it took over again (DeliveryService.unsubscribe).
 */
@WebSocketGateway({ path: '/voyage/notification/v1/ws/products' })
export class NotificationGateway implements OnGatewayConnection {
  private readonly logger = new Logger(NotificationGateway.name);

  constructor(
    private readonly delivery: DeliveryService,
    private readonly connections: ConnectionRegistry,
    private readonly authorizer: StreamAuthorizer,
    private readonly env: Env,
    private readonly metrics: Metrics,
  ) {}

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
    // One client's token cannot take the whole instance.
    if (this.connections.countOfClient(token.client_id) >= this.env.WS_MAX_CONNECTIONS_PER_CLIENT) {
      socket.close(CLOSE_AT_CAPACITY, 'too many connections for this client: reconnect later');
      return;
    }
    const expiry = setTimeout(() => socket.close(CLOSE_TOKEN_EXPIRED, 'token expired'), Math.max(token.exp * 1000 - Date.now(), 0));
    this.metrics.wsConnects.inc();
    const connection: StreamConnection = {
      socket,
      clientId: token.client_id,
      jti: token.jti,
      grantId: token.sid,
      kid: signingKeyOf(request.headers.authorization),
      alive: true,
      expiry,
    };
    this.connections.add(connection);
    socket.on('pong', () => (connection.alive = true));
    socket.once('close', () => {
      clearTimeout(expiry);
      this.connections.delete(connection);
      if (connection.subscriber) this.delivery.unsubscribe(connection.subscriber);
    });
    // The database's own timeouts bound the start only while the server answers, and an operator may
    // set them longer than a client should sit in silence: the start has a deadline of its own.
    const startDeadline = setTimeout(() => socket.close(CLOSE_TRY_AGAIN_LATER, START_FAILED), this.env.REQUEST_TIMEOUT_MS);
    try {
      await this.closeIfRevokedMeanwhile(socket, request);
      // Closed meanwhile (revoked, expired, gone): there is nothing to start.
      if (socket.readyState !== socket.OPEN) return;
      const subscriber = await this.delivery.subscribe(token.client_id, socket);
      // The socket may have closed (or been told to) while the cursor was read; its close event unsubscribes it.
      if (this.connections.has(connection)) connection.subscriber = subscriber;
      else this.delivery.unsubscribe(subscriber);
    } catch (error) {
      // The start failed (the re-check or the cursor read): the client reconnects and resumes from its cursor.
      if (!isDatabaseUnavailable(error)) this.logger.warn(`could not start delivery: ${(error as Error).message}`);
      socket.close(CLOSE_TRY_AGAIN_LATER, START_FAILED);
    } finally {
      clearTimeout(startDeadline);
    }
  }

  /**
   * A revocation of the stream's token, grant, key or client that arrived between the upgrade's
   * check and the stream's registration found nothing to close: the check is asked again now.
   */
  private async closeIfRevokedMeanwhile(socket: WebSocket, request: IncomingMessage): Promise<void> {
    if (!(await this.authorizer.recheck(request)).ok) socket.close(CLOSE_REVOKED, 'revoked while connecting');
  }
}

/** The `kid` of the bearer token the upgrade was authorized with (verified already; only its header is read here). */
function signingKeyOf(authorization: string | undefined): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(authorization?.trim().split(/ +/)[1]?.split('.')[0] ?? '', 'base64url').toString('utf8')) as { kid?: unknown };
    return typeof header.kid === 'string' ? header.kid : undefined;
  } catch {
    return undefined;
  }
}
