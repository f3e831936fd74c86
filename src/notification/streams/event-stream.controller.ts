import { BadRequestException, Controller, Get, Headers, NotAcceptableException, Query, Req, Res, ServiceUnavailableException } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import Negotiator from 'negotiator';
import { ApiErrorResponse, RETRY_AFTER_HEADER } from '../../common/errors/api-error-response.decorator.js';
import { Env } from '../../config/env.js';
import { BearerAuthenticatorService, BearerRejection } from '../../bearer/bearer-authenticator.service.js';
import { type AuthenticatedRequest, RequiresScope } from '../../bearer/bearer.guard.js';
import { SUBSCRIBE_SCOPE } from '../notification-scopes.js';
import { EVENT_STREAM_HEADERS, EventStream, type EventStreamGzip } from './event-streams.js';
import { readResumePosition } from './resume-position.js';
import { signingKeyOf } from './stream-authorizer.service.js';
import { StreamsService } from './streams.service.js';

export const EVENT_STREAM_ROUTE = 'voyage/notification/v1/sse/products';

/**
 * The notification stream as server-sent events, for networks whose proxies refuse WebSocket.
 * Everything a WebSocket stream is refused with is answered here before the stream starts, in
 * the notification routes' error format (401/403 by the bearer guard, 400 for a resume position
 * the service never sent, 406, 503 at capacity); from the 200 on, the stream lives as every
 * stream does (StreamsService).
 */
@ApiTags('notifications')
@ApiBearerAuth()
@Controller(EVENT_STREAM_ROUTE)
export class EventStreamController {
  constructor(
    private readonly streams: StreamsService,
    private readonly authenticator: BearerAuthenticatorService,
    private readonly env: Env,
  ) {}

  @Get()
  @RequiresScope(SUBSCRIBE_SCOPE, { scopeInDocs: 'the subscribe scope (DEFAULT_CLIENT_SCOPE)' })
  @ApiOperation({
    summary: "The calling client's notifications as server-sent events (scope: the subscribe scope)",
    description:
      'Each notification is `id: SEQ`, `event: notification`, `data:` the pushed JSON. `Last-Event-ID` (or `after`) resumes after that seq and confirms everything up to it. `event: reset` (`data: {"reason":"retention"|"epoch"}`) first when what was missed is no longer complete; `event: token-expired` then the end at the token\'s expiry; `event: shutdown` then the end when the instance stops; a comment line every heartbeat. gzip when accepted (unless WS_COMPRESSION=off; each event compressed on its own unless WS_COMPRESSION=context-takeover).',
  })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'the `id` of the last event received: the stream resumes after it' })
  @ApiQuery({ name: 'after', required: false, schema: { type: 'integer', minimum: 0 }, description: 'as Last-Event-ID, for clients that cannot set headers' })
  @ApiQuery({ name: 'epoch', required: false, description: 'the epoch of the database the client last read from (from a protocol v2 message): another one resets' })
  @ApiResponse({
    status: 200,
    description: 'the event stream (`Cache-Control: no-cache`, `X-Accel-Buffering: no`)',
    content: { 'text/event-stream': { schema: { type: 'string', example: 'id: 42\nevent: notification\ndata: {"correlationId":"…"}\n\n' } } },
  })
  @ApiErrorResponse(400, '`Last-Event-ID`, `after` or `epoch` is not a value the service sends')
  @ApiErrorResponse(406, 'the Accept header does not allow text/event-stream')
  @ApiErrorResponse(503, 'the instance is at WS_MAX_CONNECTIONS streams, the client at WS_MAX_CONNECTIONS_PER_CLIENT, or it is shutting down: try again after `Retry-After`', RETRY_AFTER_HEADER)
  async stream(
    @Req() request: AuthenticatedRequest,
    @Res() reply: FastifyReply,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query('after') after: unknown,
    @Query('epoch') epoch: unknown,
  ): Promise<void> {
    const negotiated = new Negotiator(request);
    if (!negotiated.mediaType(['text/event-stream'])) throw new NotAcceptableException('this route answers text/event-stream only');
    if ((after !== undefined && typeof after !== 'string') || (epoch !== undefined && typeof epoch !== 'string')) throw new BadRequestException(['after and epoch may be given once each']);
    const resume = readResumePosition(lastEventId ?? after, epoch);
    if ('error' in resume) throw new BadRequestException([resume.error]);
    const claims = request.token;
    const refusal = this.streams.refusal(claims.client_id);
    if (refusal) throw new ServiceUnavailableException(refusal.reason);
    // HEAD asks for the headers only (Fastify routes it here): no stream starts and nothing is
    // confirmed. Node sends no head before a body it would not send, so a stream would leave the
    // request unanswered, holding a connection slot, until the token expired.
    if (request.method === 'HEAD') return void reply.status(200).headers(EVENT_STREAM_HEADERS).send();

    reply.hijack();
    const stream = EventStream.start(reply.raw, { gzip: this.gzipOf(negotiated), closeTimeoutMs: this.env.WS_CLOSE_TIMEOUT_MS });
    const authorization = request.headers.authorization;
    const connection = this.streams.register(stream, { claims, kid: signingKeyOf(authorization?.trim().split(/ +/)[1]) });
    // Revoked meanwhile: false; not checkable (the database is away): thrown, and the stream ends with "reconnect later".
    const recheck = () =>
      this.authenticator.authenticate(authorization, this.env.DEFAULT_CLIENT_SCOPE).then(
        () => true,
        (error: unknown) => {
          if (error instanceof BearerRejection) return false;
          throw error;
        },
      );
    await this.streams.start(connection, recheck, resume);
  }

  /** gzip as WS_COMPRESSION says (none with `off`), when the client accepts it. */
  private gzipOf(negotiated: Negotiator): EventStreamGzip | undefined {
    if (this.env.WS_COMPRESSION === 'off' || negotiated.encoding(['identity', 'gzip']) !== 'gzip') return undefined;
    return this.env.WS_COMPRESSION === 'context-takeover' ? 'context-takeover' : 'each-event';
  }
}
