import { Body, Controller, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type Requester, RequestedBy } from '../common/http/requester.js';
import { RequestHeader } from '../common/http/request-header.decorator.js';
import { NO_STORE_HEADERS } from '../oauth/api-oauth-error-response.decorator.js';
import { OAuthExceptionFilter } from '../oauth/oauth-exception.filter.js';
import { FORM_INVALID_REQUEST, OAuthFormRoute } from '../oauth/oauth-form-route.decorator.js';
import { DeviceAuthorizationService } from './device-authorization.service.js';
import { DeviceAuthorizationRequestDto, DeviceAuthorizationResponseDto } from './dto/device-authorization.dto.js';

@ApiTags('device flow (RFC 8628)')
@Controller('sso')
@UseFilters(OAuthExceptionFilter)
export class DeviceAuthorizationController {
  constructor(private readonly deviceAuthorizations: DeviceAuthorizationService) {}

  @Post('device_authorization')
  @HttpCode(200)
  @OAuthFormRoute(
    DeviceAuthorizationRequestDto,
    `${FORM_INVALID_REQUEST}; \`unauthorized_client\` (the client is not registered for the device grant); \`invalid_scope\``,
  )
  @ApiOperation({ summary: 'Start a device authorization (RFC 8628 §3.1); the client authenticates as at /sso/token' })
  @ApiOkResponse({ type: DeviceAuthorizationResponseDto, headers: NO_STORE_HEADERS })
  start(@Body() body: unknown, @RequestedBy() requester: Requester, @RequestHeader('authorization') authorization?: string, @RequestHeader('content-type') contentType?: string) {
    return this.deviceAuthorizations.start(body, authorization, contentType, requester);
  }
}
