import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { INestApplicationContext } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { WebSocket, WebSocketServer } from 'ws';
import type { WsCompression } from '../../config/env.js';
import { RETRY_AFTER_S } from '../../common/errors/temporarily-unavailable.js';
import { answerOverHttp, asksForWebSocket } from '../../common/http/upgrade-fallback.js';
import { CloseCode } from './close-codes.js';
import type { ResumePosition } from '../delivery/delivery.service.js';
import type { UpgradeDecision } from './stream-authorizer.service.js';
import type { StreamToken } from './streams.service.js';
import { PROTOCOL_V2 } from './websocket-streams.js';
import { perMessageDeflateOptions, boundCompressionMemory } from './stream-compression.js';

const CLOSE_HANDSHAKE_MS = 1_000;

const DECISION = Symbol('voyage.upgrade');
type Admitted = Extract<UpgradeDecision, { ok: true }>;

/** The verified token of an upgraded request. */
export const tokenOfUpgrade = (request: IncomingMessage): StreamToken => (request as unknown as Record<symbol, Admitted>)[DECISION].token;
/** The position a v2 client resumes from, checked during the upgrade. */
export const resumeOfUpgrade = (request: IncomingMessage): ResumePosition | undefined => (request as unknown as Record<symbol, Admitted>)[DECISION].resume;

export interface StreamOptions {
  authorize(request: IncomingMessage): Promise<UpgradeDecision>;
  maxIncomingBytes: number;
  /** WS_COMPRESSION: whether permessage-deflate is negotiated, and with what context (stream-compression.ts). */
  compression: WsCompression;
  /** WS_CLOSE_TIMEOUT_MS: how long a closing socket waits for the client's close frame before it is destroyed. */
  closeTimeoutMs: number;
  /** Runs once every socket is closed (delivery cursors are saved then). */
  afterClose(): Promise<void>;
}

/** The port Nest gives a gateway that shares the application's HTTP server. */
const SHARED_HTTP_SERVER = 0;

/**
 * Nest's ws adapter with what the stream needs: the token is checked before the handshake (a
 * refused upgrade is a plain HTTP 401/403 with WWW-Authenticate), incoming frames are capped,
 * any other request with an Upgrade header is answered over HTTP (Nest's own listener drops its
 * connection without a word), permessage-deflate is negotiated with bounded memory
 * (stream-compression.ts), and shutdown closes every socket with 1001 instead of terminating
 * it (which clients see as 1006).
 */
export class NotificationWsAdapter extends WsAdapter {
  private stopRoutingUpgrades?: () => void;

  constructor(
    app: INestApplicationContext,
    private readonly stream: StreamOptions,
  ) {
    super(app);
  }

  /** Replaces Nest's 'upgrade' listener on the shared server with routeUpgrade. */
  protected override ensureHttpServerExists(port: number, httpServer?: Server): Server | undefined {
    if (port !== SHARED_HTTP_SERVER || !httpServer) return super.ensureHttpServerExists(port, httpServer);
    if (this.httpServersRegistry.has(port)) return undefined;
    this.httpServersRegistry.set(port, httpServer);
    const listener = (request: IncomingMessage, socket: Duplex, head: Buffer) => this.routeUpgrade(httpServer, request, socket, head);
    httpServer.on('upgrade', listener);
    this.stopRoutingUpgrades = () => httpServer.off('upgrade', listener);
    return httpServer;
  }

  /** A WebSocket request for a gateway's path goes to its server; anything else is answered over HTTP. */
  private routeUpgrade(httpServer: Server, request: IncomingMessage, socket: Duplex, head: Buffer) {
    const wsServer = asksForWebSocket(request) ? this.webSocketServerAt(request.url) : undefined;
    if (!wsServer) return answerOverHttp(httpServer, request, socket);
    wsServer.handleUpgrade(request, socket, head, (ws: WebSocket) => {
      boundCompressionMemory(ws);
      wsServer.emit('connection', ws, request);
    });
  }

  private webSocketServerAt(url: string | undefined): WebSocketServer | undefined {
    let path: string;
    try {
      path = new URL(url ?? '', 'http://localhost').pathname;
    } catch {
      return undefined;
    }
    const servers = (this.wsServersRegistry.get(SHARED_HTTP_SERVER) ?? []) as (WebSocketServer & { path: string })[];
    return servers.find((server) => server.path === path);
  }

  override async dispose(): Promise<void> {
    this.stopRoutingUpgrades?.();
    await super.dispose();
  }

  override create(port: number, options: Record<string, unknown> = {}) {
    return super.create(port, {
      ...options,
      maxPayload: this.stream.maxIncomingBytes,
      closeTimeout: this.stream.closeTimeoutMs,
      perMessageDeflate: perMessageDeflateOptions(this.stream.compression),
      // Protocol v2 when offered; otherwise as before (ws's default: the first offered, if any).
      handleProtocols: (offered: Set<string>) => (offered.has(PROTOCOL_V2) ? PROTOCOL_V2 : (offered.values().next().value ?? false)),
      verifyClient: (info: { req: IncomingMessage }, done: (ok: boolean, status?: number, message?: string, headers?: Record<string, string>) => void) => {
        this.stream.authorize(info.req).then(
          (decision) => {
            if (!decision.ok) return done(false, decision.status, decision.message, decision.headers);
            (info.req as unknown as Record<symbol, Admitted>)[DECISION] = decision;
            done(true);
          },
          // The token or the client could not be checked (the database is away or busy): try again.
          () => done(false, 503, 'Service Unavailable', { 'Retry-After': String(RETRY_AFTER_S) }),
        );
      },
    });
  }

  /**
   * A client's frame that breaks the limits or RFC 6455 (too big, unmasked, not UTF-8) ends its
   * own connection, with the code the RFC gives, and is the client's doing: one debug line
   * without a stack. Nest's adapter logged each at error level with its stack trace, a log any
   * client could fill. The server's own errors stay errors.
   */
  override bindErrorHandler(server: WebSocketServer): WebSocketServer {
    server.on('connection', (socket: WebSocket) => socket.on('error', this.logClientError));
    server.on('error', (error: Error) => this.logger.error(error));
    return server;
  }

  /** One listener shared by every socket, rather than a closure each. */
  private readonly logClientError = (error: Error) => this.logger.debug(`a stream client broke the protocol: ${error.message}`);

  /**
   * Nest binds every socket's close to its gateway's handleDisconnect. The stream's gateway has
   * none (a stream's end is StreamsService's, through whenEnded), so that listener and the closure
   * over the socket it makes would only cost memory on every idle connection.
   */
  override bindClientDisconnect(): void {}

  /**
   * The stream takes no messages from clients (the gateway subscribes to none), so the per-socket
   * RxJS pipeline Nest builds to dispatch them would only cost memory on every idle connection.
   */
  override bindMessageHandlers(...args: Parameters<WsAdapter['bindMessageHandlers']>): void {
    const [, handlers] = args;
    if (handlers.length > 0) super.bindMessageHandlers(...args);
  }

  override async close(server: WebSocketServer): Promise<void> {
    // Stop accepting first: an upgrade that completes from now on is answered 503 by ws, instead of
    // opening after the snapshot below and being cut (1006) with the silent clients.
    const stopped = new Promise((resolve) => server.close(resolve));
    const sockets = [...server.clients];
    const closed = sockets.map((socket) => new Promise((resolve) => socket.once('close', resolve)));
    for (const socket of sockets) socket.close(CloseCode.GOING_AWAY, 'server shutting down');
    // Clients normally answer the close frame at once; a silent one is cut after a second.
    const deadline = new Promise((resolve) => setTimeout(resolve, CLOSE_HANDSHAKE_MS).unref());
    await Promise.race([Promise.all(closed), deadline]);
    for (const socket of server.clients) socket.terminate();
    await stopped;
    await this.stream.afterClose();
  }
}
