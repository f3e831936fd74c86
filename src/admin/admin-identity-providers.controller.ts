import { Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { IdentityProvidersService } from '../identity-providers/identity-providers.service.js';
import { AdminController, AdminRead } from './admin-route.decorator.js';

@AdminController('identity-providers')
export class AdminIdentityProvidersController {
  constructor(private readonly providers: IdentityProvidersService) {}

  @Get()
  @AdminRead()
  @ApiOperation({ summary: 'Identity providers, by name, as idp:list shows them (never a secret)' })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'object' } } })
  list() {
    return this.providers.list();
  }
}
