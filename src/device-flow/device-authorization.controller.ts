import { Body, Controller, Headers, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { OAuthExceptionFilter } from '../token/oauth-exception.filter.js';
import { OAuthFormRoute } from '../token/oauth-form-route.decorator.js';
import { DeviceAuthorizationService } from './device-authorization.service.js';

@ApiTags('device flow (RFC 8628)')
@Controller('sso')
@UseFilters(OAuthExceptionFilter)
export class DeviceAuthorizationController {
  constructor(private readonly deviceAuthorizations: DeviceAuthorizationService) {}

  @Post('device_authorization')
  @HttpCode(200)
  @OAuthFormRoute()
  @ApiOperation({ summary: 'Start a device authorization (RFC 8628 §3.1); the client authenticates as at /sso/token' })
  @ApiOkResponse({ description: '`{device_code, user_code, verification_uri, verification_uri_complete, expires_in, interval}`' })
  start(@Body() body: unknown, @Headers('authorization') authorization?: string, @Headers('content-type') contentType?: string) {
    return this.deviceAuthorizations.start(body, authorization, contentType);
  }
}
