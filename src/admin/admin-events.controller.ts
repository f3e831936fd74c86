import { Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiQuery } from '@nestjs/swagger';
import { AuditTrailService } from '../audit/audit-trail.service.js';
import { readEventQuery } from '../audit/event-query.js';
import { AdminController, AdminRead, ApiPage } from './admin-route.decorator.js';

const EVENT_EXAMPLE = {
  id: '1042',
  at: '2026-11-28T09:14:03.120Z',
  actor: { kind: 'client', client_id: 'p0rTaLbAcKeNd0000000Aa' },
  action: 'user.disabled',
  client_id: null,
  username: 'alice',
  target: null,
  details: { revoked_grants: 2 },
};

@AdminController('events')
export class AdminEventsController {
  constructor(private readonly audit: AuditTrailService) {}

  @Get()
  @AdminRead()
  @ApiPage('id')
  @ApiQuery({ name: 'username', required: false, description: 'only events about this user' })
  @ApiQuery({ name: 'client', required: false, description: 'only events about this client, or made by it' })
  @ApiQuery({ name: 'since', required: false, description: 'ISO 8601 date or time, or a span back from now: 30m, 24h, 7d' })
  @ApiOperation({ summary: 'The audit trail, newest first, as events:list shows it: who changed what, never a secret' })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'object' }, example: [EVENT_EXAMPLE] } })
  list(@Query() query: Record<string, unknown>) {
    const { username, client, since, after, limit } = query;
    return this.audit.list(readEventQuery({ username: asText(username), client: asText(client), since: asText(since), after: asText(after), limit: asText(limit) }));
  }
}

/** A query parameter given twice arrives as an array: it is refused as no value would be. */
const asText = (value: unknown) => (value === undefined ? undefined : Array.isArray(value) ? '' : String(value));
