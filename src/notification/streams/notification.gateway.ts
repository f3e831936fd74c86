import type { IncomingMessage } from 'node:http';
import { type OnGatewayConnection, WebSocketGateway } from '@nestjs/websockets';
import type { WebSocket } from 'ws';
import { MetricsService } from '../../metrics/metrics.service.js';
import { ConnectionRegistryService, type StreamConnection } from './connection-registry.service.js';
import { DeliveryService } from '../delivery/delivery.service.js';
import { resumeOfUpgrade, tokenOfUpgrade } from './notification-ws.adapter.js';
import { ProtocolV2MessagesService } from './protocol-v2-messages.service.js';
import { StreamAuthorizerService } from './stream-authorizer.service.js';
import { StreamsService } from './streams.service.js';
import { PROTOCOL_V2, SeedWebSocketStream, V2WebSocketStream } from './websocket-streams.js';

/**
 * GET /voyage/notification/v1/ws/products: the token (and a v2 client's resume position) was
 * checked during the upgrade; here the stream speaks the protocol it negotiated — the seed's, or
 * v2 (subprotocol `voyage.v2`) — and lives as every stream does (StreamsService).
 */
@WebSocketGateway({ path: '/voyage/notification/v1/ws/products' })
export class NotificationGateway implements OnGatewayConnection {

  constructor(
    private readonly streams: StreamsService,
    private readonly delivery: DeliveryService,
    private readonly connections: ConnectionRegistryService,
    private readonly authorizer: StreamAuthorizerService,
    private readonly v2Messages: ProtocolV2MessagesService,
    private readonly metrics: MetricsService,
  ) {}

  get openConnections(): number {
    return this.connections.size;
  }

  async handleConnection(socket: WebSocket, request: IncomingMessage): Promise<void> {
    const token = tokenOfUpgrade(request);
    socket.on('close', this.countClose);
    const refusal = this.streams.refusal(token.claims.client_id);
    if (refusal) {
      socket.close(refusal.code, refusal.reason);
      return;
    }
    const v2 = socket.protocol === PROTOCOL_V2;
    const stream = v2 ? new V2WebSocketStream(socket) : new SeedWebSocketStream(socket);
    const connection = this.streams.register(stream, token);
    this.listen(socket, connection, v2);
    // The request is let go once the stream has started: no listener made here may keep it (see `listen`).
    const recheck = async () => (await this.authorizer.recheck(request)).ok;
    // A v2 client always learns the epoch, and whether its history is complete, even without a position.
    await this.streams.start(connection, recheck, v2 ? (resumeOfUpgrade(request) ?? {}) : undefined);
  }

  /** One listener for every socket: ws emits 'close' once. */
  private readonly countClose = (code: number) => this.metrics.wsCloses.inc({ code });

  /**
   * The socket's listeners for its whole life, made apart from handleConnection: closures made in
   * one function share its variables, so one made there would keep the upgrade request (its
   * headers, its token) alive as long as the connection.
   */
  private listen(socket: WebSocket, connection: StreamConnection, v2: boolean): void {
    socket.on('pong', (data: Buffer) => {
      connection.alive = true;
      // Delivery pings carry a seq; the heartbeat's pings carry nothing.
      if (!v2 && connection.subscriber) this.delivery.confirmPing(connection.subscriber, data);
    });
    if (v2) this.v2Messages.listen(socket, connection);
  }
}
