import { BadRequestException, Body, Controller, Get, HttpCode, PayloadTooLargeException, Post, Query, Req, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { invalidInput } from '../../common/errors/app-error.js';
import { Env } from '../../config/env.js';
import { ApiErrorResponse, ApiUnavailableResponse, RETRY_AFTER_HEADER } from '../../common/errors/api-error-response.decorator.js';
import { type AuthenticatedRequest, RequiresScope } from '../../bearer/bearer.guard.js';
import { PUBLISH_SCOPE, SUBSCRIBE_SCOPE } from '../notification-scopes.js';
import { BatchAcceptedDto, ListedNotificationDto, PublishAcceptedDto } from './dto/notification-response.dto.js';
import { isCalendarDate, PublishNotificationDto } from './dto/publish-notification.dto.js';
import { type HistoryQuery, NotificationHistoryService } from './notification-history.service.js';
import { type Abandoned, NotificationPublisherService } from './notification-publisher.service.js';
import { PublishBodyPipe, readPublishBody } from './publish-body.pipe.js';

export const NOTIFICATIONS_ROUTE = 'voyage/notification/v1/notifications';
/** The batch route reads bodies up to PUBLISH_BATCH_MAX_BYTES (set on the route in app.ts); every other route 64 KiB. */
export const BATCH_PUBLISH_PATH = `/${NOTIFICATIONS_ROUTE}/batch`;

const ApiPublishUnavailableResponse = () =>
  ApiErrorResponse(
    503,
    'the database is away or busy, PUBLISH_QUEUE_MAX publishes wait already (nothing of the request is stored), or the request was not answered within REQUEST_TIMEOUT_MS (what still waited then is never stored): publish again after `Retry-After`; what was stored answers as a duplicate',
    RETRY_AFTER_HEADER,
  );

// The publish body pipe is applied here rather than globally: a global pipe runs on every
// parameter of every route, which cost the code poll a fifth of its throughput for nothing.
@ApiTags('notifications')
@ApiBearerAuth()
@Controller(NOTIFICATIONS_ROUTE)
export class NotificationController {
  constructor(
    private readonly publisher: NotificationPublisherService,
    private readonly history: NotificationHistoryService,
    private readonly env: Env,
  ) {}

  @Post()
  @HttpCode(202)
  @RequiresScope(PUBLISH_SCOPE)
  @ApiOperation({ summary: 'Publish a report notification to a recipient client (scope notification:publish)' })
  @ApiAcceptedResponse({ type: PublishAcceptedDto, description: 'answered once the notification is durably stored' })
  @ApiErrorResponse(
    400,
    '`errors` lists the field errors (a control character or a lone surrogate in a text field is one; so is a recipient that is no registered client); without `errors` for JSON that cannot be read or nests deeper than 32 levels',
  )
  @ApiErrorResponse(413, 'the body is over 64 KiB')
  @ApiErrorResponse(415, 'a media type the service does not read: send application/json')
  @ApiPublishUnavailableResponse()
  publish(@Body(PublishBodyPipe) body: PublishNotificationDto, @Req() request: AuthenticatedRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.publisher.publish(body, request.token.client_id, answeredOrGone(reply));
  }

  @Post('batch')
  @HttpCode(202)
  @RequiresScope(PUBLISH_SCOPE)
  @ApiOperation({
    summary: 'Publish up to PUBLISH_BATCH_MAX notifications in one request (scope notification:publish)',
    description:
      'Each element is a body of the single publish route and is validated, stored and deduplicated as that route would. The answer has one result per element, in order: `{id}` (or `{id, duplicate: true}`) once stored, or `{status: 400, errors}` for an element that was refused, which stores nothing for it and does not stop the others. Each recipient receives its notifications in the order of the array. A 503 fails the whole batch; sending it again is safe, as what was stored answers as a duplicate.',
  })
  @ApiBody({ type: [PublishNotificationDto] })
  @ApiAcceptedResponse({ type: BatchAcceptedDto, description: 'answered once every valid element is durably stored' })
  @ApiErrorResponse(400, 'the body is not a JSON array of 1 to PUBLISH_BATCH_MAX elements, or is JSON that cannot be read or nests deeper than 32 levels')
  @ApiErrorResponse(413, 'more than PUBLISH_BATCH_MAX elements (default 1,000), or a body over PUBLISH_BATCH_MAX_BYTES (default 4 MiB)')
  @ApiErrorResponse(415, 'a media type the service does not read: send application/json')
  @ApiPublishUnavailableResponse()
  async publishBatch(@Body() body: unknown, @Req() request: AuthenticatedRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const max = this.env.PUBLISH_BATCH_MAX;
    if (!Array.isArray(body) || body.length === 0) throw invalidInput(`the body must be a JSON array of 1 to ${max} notifications`);
    if (body.length > max) throw new PayloadTooLargeException(`at most ${max} notifications per request: send the others in another request`);
    const elements = await Promise.all(body.map(readPublishBody));
    return { results: await this.publisher.publishBatch(elements, request.token.client_id, answeredOrGone(reply)) };
  }

  @Get()
  @RequiresScope(SUBSCRIBE_SCOPE, { scopeInDocs: 'the subscribe scope (DEFAULT_CLIENT_SCOPE)' })
  @ApiOperation({
    summary: "The calling client's notifications (within retention) published since a time, or after a seq, oldest first",
    description:
      'Give `since`, `after` or both (both: what satisfies both). To page without gaps or repeats, ask again with `after` set to the last `seq` of the answer, until an answer is empty.',
  })
  @ApiQuery({ name: 'since', required: false, description: 'RFC 3339 timestamp, e.g. 2026-11-21T08:30:00Z: notifications published at or after it' })
  @ApiQuery({ name: 'after', required: false, schema: { type: 'integer', minimum: 0, format: 'int64' }, description: 'a `seq` of an earlier answer (or 0): notifications after it' })
  @ApiOkResponse({ type: [ListedNotificationDto], description: 'as pushed, plus each one\'s `seq`; oldest first, at most 1,000 (page on with `after`)' })
  @ApiErrorResponse(400, '`since` and `after` both missing, `since` not an RFC 3339 timestamp, or `after` not an integer from 0 to 9223372036854775807')
  @ApiUnavailableResponse()
  list(@Query('since') since: unknown, @Query('after') after: unknown, @Req() request: AuthenticatedRequest) {
    return this.history.list(request.token.client_id, readHistoryQuery(since, after));
  }
}

/** The history route's `since` and `after`, or a 400 naming each that is wrong. */
function readHistoryQuery(since: unknown, after: unknown): HistoryQuery {
  const errors: string[] = [];
  if (since === undefined && after === undefined) errors.push('give since (an RFC 3339 timestamp), after (a seq of an earlier answer) or both');
  if (since !== undefined && (typeof since !== 'string' || !RFC3339.test(since) || !isCalendarDate(since) || Number.isNaN(Date.parse(since)))) {
    errors.push('since must be an RFC 3339 timestamp, e.g. 2026-11-21T08:30:00Z');
  }
  // A seq is a PostgreSQL bigint: kept as text up to the SQL, so no precision is lost on the way.
  if (after !== undefined && (typeof after !== 'string' || !SEQ.test(after) || BigInt(after) > MAX_SEQ)) {
    errors.push(`after must be a seq: an integer from 0 to ${MAX_SEQ}`);
  }
  if (errors.length > 0) throw new BadRequestException(errors);
  return { since: since === undefined ? undefined : new Date(since as string), after: after as string | undefined };
}

/** Whether the request was answered already (the deadline's 503) or its client left: a publish still waiting then is dropped. */
const answeredOrGone =
  (reply: FastifyReply): Abandoned =>
  () =>
    reply.sent || reply.raw.destroyed;

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;
const SEQ = /^\d{1,19}$/;
const MAX_SEQ = 2n ** 63n - 1n;
