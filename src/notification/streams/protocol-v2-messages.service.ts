import { Injectable } from '@nestjs/common';
import type { RawData, WebSocket } from 'ws';
import { CloseCode } from './close-codes.js';
import type { StreamConnection } from './connection-registry.service.js';
import { DeliveryService } from '../delivery/delivery.service.js';
import { StreamAuthorizerService } from './stream-authorizer.service.js';
import { StreamsService } from './streams.service.js';

/** A v2 client's message, read. */
export type V2ClientMessage = { type: 'ack'; seq: number } | { type: 'token'; accessToken: string } | { type: 'other' };

/** Longer than any access token the service issues, shorter than WS_MAX_INCOMING_BYTES allows. */
const TOKEN_MAX = 4096;

/**
 * What a protocol v2 client may say: `{"type":"ack","seq":N}` (N and everything before it on
 * this connection were read) and `{"type":"token","access_token":T}` (T replaces the stream's
 * token). A message of another `type` is ignored, so later versions may add some; anything else
 * is not protocol v2.
 */
export function readV2Message(data: RawData, isBinary: boolean): V2ClientMessage | { error: string } {
  if (isBinary) return { error: 'protocol v2 messages are JSON text' };
  let message: unknown;
  try {
    message = JSON.parse(data.toString());
  } catch {
    return { error: 'a message is not JSON' };
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message) || typeof (message as { type?: unknown }).type !== 'string') {
    return { error: 'a message is not a JSON object with a type' };
  }
  const { type, seq, access_token: accessToken } = message as { type: string; seq?: unknown; access_token?: unknown };
  if (type === 'ack') return Number.isSafeInteger(seq) && (seq as number) > 0 ? { type, seq: seq as number } : { error: 'an ack needs seq, a positive integer' };
  if (type === 'token') {
    return typeof accessToken === 'string' && accessToken.length > 0 && accessToken.length <= TOKEN_MAX ? { type, accessToken } : { error: 'a token message needs access_token' };
  }
  return { type: 'other' };
}

/**
 * A v2 stream's incoming messages. Acks go to the delivery (which never lets one confirm more
 * than was sent); a replacement token is checked like the upgrade's, one at a time (of several
 * sent meanwhile, the last one counts), and a valid one moves the stream's expiry, an invalid one
 * closes it with 4003. A valid one is checked again once the stream is re-keyed: one revoked in
 * between closes it with 1008, as a revocation does.
 */
@Injectable()
export class ProtocolV2MessagesService {
  constructor(
    private readonly delivery: DeliveryService,
    private readonly streams: StreamsService,
    private readonly authorizer: StreamAuthorizerService,
  ) {}

  listen(socket: WebSocket, connection: StreamConnection): void {
    let checking = false;
    let next: string | undefined;
    const replace = async (accessToken: string) => {
      checking = true;
      try {
        const token = await this.authorizer.replacement(accessToken, connection.clientId);
        if (!token) return socket.close(CloseCode.TOKEN_EXPIRED, 'the new token is not valid for this stream');
        this.streams.replaceToken(connection, token);
        // A revocation of the new token that arrived during the check found the stream under the
        // old one: asked again now that revocations name the new one, as the upgrade's re-check.
        if (!(await this.authorizer.replacement(accessToken, connection.clientId))) socket.close(CloseCode.POLICY, 'revoked while the token was replaced');
      } catch {
        // It could not be checked (the database is away): the stream keeps its token until it expires.
      } finally {
        checking = false;
        if (next !== undefined && socket.readyState === socket.OPEN) void replace(next);
        next = undefined;
      }
    };
    socket.on('message', (data: RawData, isBinary: boolean) => {
      const message = readV2Message(data, isBinary);
      if ('error' in message) return socket.close(CloseCode.PROTOCOL_ERROR, message.error);
      if (message.type === 'ack' && connection.subscriber) this.delivery.acknowledge(connection.subscriber, message.seq);
      else if (message.type === 'token') {
        if (checking) next = message.accessToken;
        else void replace(message.accessToken);
      }
    });
  }
}
