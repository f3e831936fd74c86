import { Get, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { ApiErrorResponse } from '../common/errors/api-error-response.decorator.js';
import { KeyAdminService } from '../keys/key-admin.service.js';
import { AdminController, AdminRead, AdminWrite } from './admin-route.decorator.js';

@AdminController('keys')
export class AdminKeysController {
  constructor(private readonly keys: KeyAdminService) {}

  @Get()
  @AdminRead()
  @ApiOperation({ summary: 'Signing keys, newest first, as keys:list shows them (public facts only)' })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'object' } } })
  list() {
    return this.keys.list();
  }

  @Post('rotate')
  @HttpCode(200)
  @AdminWrite()
  @ApiOperation({ summary: 'Rotate the signing keys, as keys:rotate: a new key per algorithm, in the JWKS at once, signing after KEY_ACTIVATION_DELAY' })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'object' } } })
  @ApiErrorResponse(409, 'a rotated key still waits to sign: rotate again once it signs')
  rotate() {
    return this.keys.rotate();
  }
}
