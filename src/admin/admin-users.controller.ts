import { Body, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiQuery } from '@nestjs/swagger';
import { ClientsService } from '../clients/clients.service.js';
import { ApiErrorResponse } from '../common/errors/api-error-response.decorator.js';
import { GrantsService } from '../grants/grants.service.js';
import { SignOutsRepository } from '../grants/sign-outs.repository.js';
import { UsersService } from '../users/users.service.js';
import { AdminController, AdminRead, AdminWrite, ApiPage } from './admin-route.decorator.js';
import { readPageQuery, USER_ID_SHAPE } from '../common/validation/page-query.js';

const USER_EXAMPLE = { id: '0b6f1c9e-3f5a-4a51-9d0e-6f1a2b3c4d5e', username: 'alice', provider: null, enabled: true, created_at: '2026-11-28T09:14:03.120Z' };
const NO_USER = 'no user with this username';

@AdminController('users')
export class AdminUsersController {
  constructor(
    private readonly users: UsersService,
    private readonly clients: ClientsService,
    private readonly grants: GrantsService,
    private readonly signOuts: SignOutsRepository,
  ) {}

  @Get()
  @AdminRead()
  @ApiPage('id')
  @ApiOperation({ summary: 'Portal users, by id, as user:list shows them (never a password)' })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'object' }, example: [USER_EXAMPLE] } })
  list(@Query('limit') limit?: unknown, @Query('after') after?: unknown) {
    const page = readPageQuery(limit, after, USER_ID_SHAPE);
    return this.users.page(page.after, page.limit);
  }

  @Post()
  @AdminWrite()
  @ApiOperation({ summary: 'Create a portal user, as user:create (the password by the same rules)' })
  @ApiBody({ schema: { type: 'object', required: ['username', 'password'], properties: { username: { type: 'string' }, password: { type: 'string' } }, example: { username: 'alice', password: 'correct horse battery staple' } } })
  @ApiCreatedResponse({ schema: { type: 'object', example: USER_EXAMPLE } })
  @ApiErrorResponse(400, 'the username or the password is refused by user:create\'s rules: `errors` says why')
  @ApiErrorResponse(409, 'a user with this username exists')
  create(@Body() body: unknown) {
    // user:create's rules judge the body, its shape included (not an object: 400).
    return this.users.create(body as { username?: string; password?: string });
  }

  @Post(':username/disable')
  @HttpCode(200)
  @AdminWrite()
  @ApiOperation({ summary: 'Disable a user, as user:disable: they cannot sign in, and every device of theirs is signed out' })
  @ApiOkResponse({ schema: { type: 'object', example: { ...USER_EXAMPLE, enabled: false, revoked_grants: 2 } } })
  @ApiErrorResponse(404, NO_USER)
  disable(@Param('username') username: string) {
    return this.users.disable(username);
  }

  @Post(':username/enable')
  @HttpCode(200)
  @AdminWrite()
  @ApiOperation({ summary: 'Enable a user again, as user:enable (grants revoked meanwhile stay revoked)' })
  @ApiOkResponse({ schema: { type: 'object', example: USER_EXAMPLE } })
  @ApiErrorResponse(404, NO_USER)
  enable(@Param('username') username: string) {
    return this.users.enable(username);
  }

  @Get(':username/grants')
  @AdminRead()
  @ApiOperation({ summary: "A user's signed-in devices (live grants), as grants:list shows them" })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'object' } } })
  @ApiErrorResponse(404, NO_USER)
  async listGrants(@Param('username') username: string) {
    return this.grants.liveOfUser((await this.users.show(username)).id);
  }

  @Delete(':username/grants')
  @AdminWrite()
  @ApiOperation({ summary: 'Sign a user out of every device, or of one client\'s with ?client_id=, as grants:revoke' })
  @ApiQuery({ name: 'client_id', required: false })
  @ApiOkResponse({ schema: { type: 'object', example: { user_id: USER_EXAMPLE.id, username: 'alice', client_id: null, revoked_grants: 2 } } })
  @ApiErrorResponse(404, 'no user with this username, or no client with this client_id')
  async revokeGrants(@Param('username') username: string, @Query('client_id') clientId?: unknown) {
    const user = await this.users.show(username);
    const client = clientId === undefined ? null : await this.clients.show(String(clientId));
    const revoked = await this.signOuts.signOutNow({ userId: user.id, ...(client ? { clientId: client.client_id } : {}) });
    return { user_id: user.id, username: user.username, client_id: client?.client_id ?? null, revoked_grants: revoked };
  }

  @Delete(':username/grants/:grantId')
  @AdminWrite()
  @ApiOperation({ summary: 'Sign a user out of one device: revoke one grant by its grant_id, as grants:revoke --grant' })
  @ApiOkResponse({ schema: { type: 'object', example: { user_id: USER_EXAMPLE.id, username: 'alice', client_id: 'n2J0c1hQ8aR7vJx5mK3LwA', grant_id: '5c1d…', revoked_grants: 1 } } })
  @ApiErrorResponse(404, 'no user with this username, or no grant of theirs with this id')
  async revokeGrant(@Param('username') username: string, @Param('grantId') grantId: string) {
    const user = await this.users.show(username);
    return this.grants.revokeOneNow(grantId, user);
  }
}
