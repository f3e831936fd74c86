import { BadRequestException, Body, Controller, Get, HttpCode, Post, Query, Req, UseGuards, ValidationPipe } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBadRequestResponse, ApiBearerAuth, ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiPayloadTooLargeResponse, ApiQuery, ApiServiceUnavailableResponse, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { type AuthenticatedRequest, BearerGuard, Requires } from './bearer.guard.js';
import { isCalendarDate, PublishNotificationDto } from './dto/publish-notification.dto.js';
import { NotificationHistory } from './notification-history.service.js';
import { NotificationPublisher } from './notification-publisher.service.js';

/**
 * The only body validated against a DTO. Validation is applied here rather than globally: a
 * global pipe runs on every parameter of every route, which cost the code poll a fifth of its
 * throughput for nothing.
 */
const VALIDATED_BODY = new ValidationPipe({ whitelist: true, transform: true });

@ApiTags('notifications')
@ApiBearerAuth()
@Controller('voyage/notification/v1/notifications')
@UseGuards(BearerGuard)
export class NotificationController {
  constructor(
    private readonly publisher: NotificationPublisher,
    private readonly history: NotificationHistory,
  ) {}

  @Post()
  @HttpCode(202)
  @Requires('publish')
  @ApiOperation({ summary: 'Publish a report notification to a recipient client (scope notification:publish)' })
  @ApiAcceptedResponse({ description: '`{id}`, answered once the notification is durably stored; a repeat of (recipient, correlationId, status) stores nothing and answers `{id, duplicate: true}` with the stored id' })
  @ApiBadRequestResponse({ description: '`{message, errors: [...], correlationId}` field errors (a control character in a text field is one); `{message, correlationId}` for JSON that cannot be read or nests deeper than 32 levels' })
  @ApiPayloadTooLargeResponse({ description: 'the body is over 64 KiB' })
  @ApiUnauthorizedResponse({ description: 'missing, invalid or expired token' })
  @ApiForbiddenResponse({ description: 'token without notification:publish' })
  @ApiServiceUnavailableResponse({ description: 'the database is away or busy: `Retry-After` says when to publish again (a repeat is stored once)' })
  publish(@Body(VALIDATED_BODY) body: PublishNotificationDto, @Req() request: AuthenticatedRequest) {
    return this.publisher.publish(body, request.token.client_id);
  }

  @Get()
  @Requires('subscribe')
  @ApiOperation({ summary: "The calling client's notifications published since a time (within retention), oldest first" })
  @ApiQuery({ name: 'since', required: true, description: 'RFC 3339 timestamp' })
  @ApiOkResponse({ description: 'array of notifications, exactly as pushed' })
  list(@Query('since') since: unknown, @Req() request: AuthenticatedRequest) {
    if (typeof since !== 'string' || !RFC3339.test(since) || !isCalendarDate(since) || Number.isNaN(Date.parse(since))) {
      throw new BadRequestException(['since must be an RFC 3339 timestamp, e.g. 2026-11-21T08:30:00Z']);
    }
    return this.history.since(request.token.client_id, new Date(since));
  }
}

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;
