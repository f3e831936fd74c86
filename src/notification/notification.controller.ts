import { BadRequestException, Body, Controller, Get, HttpCode, Post, Query, Req, UseGuards, ValidationPipe } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse, ApiUnavailableResponse } from '../common/errors/api-error-response.decorator.js';
import { ApiBearerRefusals, type AuthenticatedRequest, BearerGuard, Requires } from './bearer.guard.js';
import { NotificationMessageDto, PublishAcceptedDto } from './dto/notification-response.dto.js';
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
  @ApiAcceptedResponse({ type: PublishAcceptedDto, description: 'answered once the notification is durably stored' })
  @ApiErrorResponse(
    400,
    '`errors` lists the field errors (a control character in a text field is one; so is a recipient that is no registered client); without `errors` for JSON that cannot be read or nests deeper than 32 levels',
  )
  @ApiBearerRefusals('notification:publish')
  @ApiErrorResponse(413, 'the body is over 64 KiB')
  @ApiErrorResponse(415, 'a media type the service does not read: send application/json')
  @ApiUnavailableResponse()
  publish(@Body(VALIDATED_BODY) body: PublishNotificationDto, @Req() request: AuthenticatedRequest) {
    return this.publisher.publish(body, request.token.client_id);
  }

  @Get()
  @Requires('subscribe')
  @ApiOperation({ summary: "The calling client's notifications published since a time (within retention), oldest first" })
  @ApiQuery({ name: 'since', required: true, description: 'RFC 3339 timestamp, e.g. 2026-11-21T08:30:00Z' })
  @ApiOkResponse({ type: [NotificationMessageDto], description: 'exactly as pushed, oldest first, at most 1,000 (page with a later `since`)' })
  @ApiErrorResponse(400, '`since` is missing or not an RFC 3339 timestamp')
  @ApiBearerRefusals('the subscribe scope (DEFAULT_CLIENT_SCOPE)')
  @ApiUnavailableResponse()
  list(@Query('since') since: unknown, @Req() request: AuthenticatedRequest) {
    if (typeof since !== 'string' || !RFC3339.test(since) || !isCalendarDate(since) || Number.isNaN(Date.parse(since))) {
      throw new BadRequestException(['since must be an RFC 3339 timestamp, e.g. 2026-11-21T08:30:00Z']);
    }
    return this.history.since(request.token.client_id, new Date(since));
  }
}

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;
