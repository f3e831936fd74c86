import { Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { ClientsService } from '../clients/clients.service.js';
import { ApiErrorResponse } from '../common/errors/api-error-response.decorator.js';
import { AdminController, AdminRead, ApiPage } from './admin-route.decorator.js';
import { CLIENT_ID_SHAPE, readPageQuery } from '../common/validation/page-query.js';

const CLIENT_EXAMPLE = {
  client_id: 'n2J0c1hQ8aR7vJx5mK3LwA',
  name: 'Bridge tablet, MV Nordic Star',
  grants: ['authorization_code', 'refresh_token'],
  redirect_patterns: ['http://192.168.0.0/16:*/callback'],
  scopes: ['notification:subscribe'],
  scope_descriptions: {},
  sign_in_methods: ['local'],
  enabled: true,
  token_endpoint_auth_method: 'client_secret_basic',
  post_logout_redirect_uris: [],
  id_token_signed_response_alg: 'RS256',
  heartbeat_interval: null,
  created_at: '2026-11-28T09:14:03.120Z',
  updated_at: '2026-11-28T09:14:03.120Z',
  previous_secret_expires_at: null,
};

@AdminController('clients')
export class AdminClientsController {
  constructor(private readonly clients: ClientsService) {}

  @Get()
  @AdminRead()
  @ApiPage('client_id')
  @ApiOperation({ summary: 'Registered clients, by client_id, as client:list shows them (never a secret)' })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'object' }, example: [CLIENT_EXAMPLE] } })
  list(@Query('limit') limit?: unknown, @Query('after') after?: unknown) {
    const page = readPageQuery(limit, after, CLIENT_ID_SHAPE);
    return this.clients.page(page.after, page.limit);
  }

  @Get(':clientId')
  @AdminRead()
  @ApiOperation({ summary: 'One client, as client:show shows it' })
  @ApiOkResponse({ schema: { type: 'object', example: CLIENT_EXAMPLE } })
  @ApiErrorResponse(404, 'no client with this id')
  show(@Param('clientId') clientId: string) {
    return this.clients.show(clientId);
  }
}
