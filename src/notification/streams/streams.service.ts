import { type BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { Env } from '../../config/env.js';
import { isDatabaseUnavailable } from '../../common/errors/database-unavailable.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import type { AccessTokenClaims } from '../../token/access-tokens.service.js';
import { CloseCode } from './close-codes.js';
import { ConnectionRegistryService, type StreamConnection } from './connection-registry.service.js';
import { DeliveryService, type ResumePosition } from '../delivery/delivery.service.js';
import type { Outlet } from '../delivery/outlet.js';
import type { StreamTransport } from './stream-transport.js';

/** A v2 stream is told this long before its token expires, so it can replace it in band. */
const EXPIRING_NOTICE_S = 60;
const START_FAILED = 'service unavailable: reconnect later';

/** What a stream's lifecycle reaches (StreamTransport) and its delivery fills (Outlet); a v2 stream can also be told its token is expiring. */
export type Stream = StreamTransport & Outlet & { expiring?(seconds: number): void };

/** The token a stream was let in with: its claims, and the key that signed it (what a revocation names). */
export interface StreamToken {
  claims: AccessTokenClaims;
  kid?: string;
}

/**
 * The life of a notification stream, whatever carries it (WebSocket v1 or v2, server-sent
 * events): the capacity checks (the instance's, and one client's share of it), the close at the
 * token's expiry, its registration (from which every revocation finds it), and its delivery
 * (replay first, then live).
 *
 * A revocation that arrived between the token's check and the registration found no stream to
 * close: the check is asked again right after (`recheck`). A stream is never open without a
 * delivery position: its start (that check, the cursor read and the take-over of a hold) either
 * completes within REQUEST_TIMEOUT_MS, or the stream is closed with 1013 and the client
 * reconnects and resumes from its cursor. A start that completes after its stream was closed
 * leaves the hold it took over again (DeliveryService.unsubscribe).
 */
@Injectable()
export class StreamsService implements BeforeApplicationShutdown {
  private readonly logger = new Logger(StreamsService.name);
  private shuttingDown = false;

  constructor(
    private readonly delivery: DeliveryService,
    private readonly connections: ConnectionRegistryService,
    private readonly env: Env,
    private readonly metrics: MetricsService,
  ) {}

  /** Why a new stream of this client cannot open here now, if it cannot: the client reconnects later (here or elsewhere). */
  refusal(clientId: string): { code: number; reason: string } | undefined {
    if (this.shuttingDown) return { code: CloseCode.GOING_AWAY, reason: 'server shutting down' };
    if (this.connections.size >= this.env.WS_MAX_CONNECTIONS) return { code: CloseCode.POLICY, reason: 'server at capacity: reconnect later' };
    // One client's token cannot take the whole instance.
    if (this.connections.countOfClient(clientId) >= this.env.WS_MAX_CONNECTIONS_PER_CLIENT) return { code: CloseCode.POLICY, reason: 'too many connections for this client: reconnect later' };
    return undefined;
  }

  /**
   * Registers a stream let in (after `refusal`): from now on revocations find it. Every stream,
   * whatever carries it, is unregistered here exactly once when its socket ends, whenever that
   * happens: a client that left while its checks were awaited (its close event already past) is
   * unregistered at once, and never holds a share of WS_MAX_CONNECTIONS.
   */
  register(stream: Stream, token: StreamToken): StreamConnection {
    this.metrics.wsConnects.inc();
    const connection: StreamConnection = {
      transport: stream,
      clientId: token.claims.client_id,
      jti: token.claims.jti,
      grantId: token.claims.sid,
      kid: token.kid,
      alive: true,
    };
    this.armExpiry(connection, token.claims.exp);
    this.connections.add(connection);
    stream.whenEnded(() => this.closed(connection));
    return connection;
  }

  /** Starts the registered stream's delivery, from its client's cursor or from where it says it is (`resume`). */
  async start(connection: StreamConnection, recheck: () => Promise<boolean>, resume?: ResumePosition): Promise<void> {
    const stream = connection.transport as Stream;
    // The database's own timeouts bound the start only while the server answers, and an operator may
    // set them longer than a client should sit in silence: the start has a deadline of its own.
    const startDeadline = setTimeout(() => stream.close(CloseCode.TRY_AGAIN_LATER, START_FAILED), this.env.REQUEST_TIMEOUT_MS);
    try {
      if (!(await recheck())) stream.close(CloseCode.POLICY, 'revoked while connecting');
      // Closed meanwhile (revoked, expired, gone): there is nothing to start.
      if (!stream.isOpen) return;
      const subscriber = await this.delivery.subscribe(connection.clientId, stream, resume);
      // The stream may have closed (or been told to) while the cursor was read; `closed` unsubscribed it then.
      if (this.connections.has(connection)) connection.subscriber = subscriber;
      else this.delivery.unsubscribe(subscriber);
    } catch (error) {
      // The start failed (the re-check or the cursor read): the client reconnects and resumes from its cursor.
      if (!isDatabaseUnavailable(error)) this.logger.warn(`could not start delivery: ${(error as Error).message}`);
      stream.close(CloseCode.TRY_AGAIN_LATER, START_FAILED);
    } finally {
      clearTimeout(startDeadline);
    }
  }

  /** The stream's socket ended: it is no longer found, and what it confirmed is kept. */
  private closed(connection: StreamConnection): void {
    clearTimeout(connection.expiry);
    this.connections.delete(connection);
    if (connection.subscriber) this.delivery.unsubscribe(connection.subscriber);
  }

  /**
   * A v2 stream's new token (verified: the same client, the subscribe scope): revocations now
   * name it, and the stream lives until it expires.
   */
  replaceToken(connection: StreamConnection, token: StreamToken): void {
    if (!this.connections.has(connection)) return;
    this.connections.retoken(connection, { jti: token.claims.jti, grantId: token.claims.sid, kid: token.kid });
    clearTimeout(connection.expiry);
    this.armExpiry(connection, token.claims.exp);
  }

  /**
   * At SIGTERM, before the HTTP server closes (which would wait for every open event stream):
   * no stream opens any more, and every one ends with 1001 (an event stream says `shutdown`).
   * The WebSocket adapter then cuts a client that does not answer its close.
   */
  beforeApplicationShutdown(): void {
    this.shuttingDown = true;
    for (const connection of this.connections) connection.transport.close(CloseCode.GOING_AWAY, 'server shutting down');
  }

  /** Closes the stream with 4003 at `exp`; a stream that can replace its token is told EXPIRING_NOTICE_S before (or at half a shorter life). */
  private armExpiry(connection: StreamConnection, exp: number): void {
    const stream = connection.transport as Stream;
    const left = Math.max(exp * 1000 - Date.now(), 0);
    const close = () => stream.close(CloseCode.TOKEN_EXPIRED, 'token expired');
    if (!stream.expiring) {
      connection.expiry = setTimeout(close, left);
      return;
    }
    // A token shorter-lived than the notice is told at half its life, not at once: a client that
    // replaces it as soon as it is told would otherwise be told again at once, and again.
    const notice = Math.min(EXPIRING_NOTICE_S * 1000, left / 2);
    connection.expiry = setTimeout(() => {
      stream.expiring!(Math.round(notice / 1000));
      connection.expiry = setTimeout(close, notice);
    }, left - notice);
  }
}
