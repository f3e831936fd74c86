import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Req, UseFilters } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type AuthenticatedRequest, RequiresScope } from '../bearer/bearer.guard.js';
import { BearerExceptionFilter } from '../bearer/bearer-exception.filter.js';
import { type Requester, RequestedBy } from '../common/http/requester.js';
import { RequestHeader } from '../common/http/request-header.decorator.js';
import { ApiOAuthErrorResponse, ApiOAuthUnavailableResponse, NO_STORE_HEADERS } from '../oauth/api-oauth-error-response.decorator.js';
import { NoStore } from '../oauth/no-store.decorator.js';
import { RETRY_AFTER_HEADER } from '../common/errors/api-error-response.decorator.js';
import { ClientConfigurationDto, ClientMetadataDto, RegistrationDto } from './dto/client-metadata.dto.js';
import { RegistrationService } from './registration.service.js';

/** The scope of a token that may register clients. */
export const REGISTER_SCOPE = 'clients:register';

const MANAGEMENT_REFUSED = 'no registration access token, or not this client\'s (`invalid_token`); an unknown, deleted or disabled client answers the same';

@ApiTags('client registration (RFC 7591, RFC 7592)')
@Controller('sso/register')
@UseFilters(BearerExceptionFilter)
export class RegistrationController {
  constructor(private readonly registrations: RegistrationService) {}

  @Post()
  @NoStore()
  @HttpCode(201)
  @RequiresScope(REGISTER_SCOPE, { format: 'oauth' })
  @ApiBearerAuth()
  @ApiOperation({ summary: 'Register a client (RFC 7591) with a client-credentials token holding clients:register' })
  @ApiBody({ type: ClientMetadataDto })
  @ApiCreatedResponse({ type: RegistrationDto, headers: NO_STORE_HEADERS })
  @ApiOAuthErrorResponse(400, '`invalid_client_metadata` (a value the registry refuses, a scope outside REGISTRATION_SCOPES, a name taken) or `invalid_redirect_uri`, with `error_description`')
  @ApiOAuthErrorResponse(413, '`invalid_request`: the body is over 64 KiB')
  @ApiOAuthErrorResponse(429, '`slow_down`: this token\'s client registered REGISTRATION_RATE_LIMIT clients in the last minute', RETRY_AFTER_HEADER)
  @ApiOAuthUnavailableResponse()
  register(@Body() body: unknown, @Req() request: AuthenticatedRequest, @RequestedBy() requester: Requester) {
    return this.registrations.register(body, request.token.client_id, requester);
  }

  @Get(':clientId')
  @NoStore()
  @ApiBearerAuth()
  @ApiOperation({ summary: 'Read a registration (RFC 7592 §2.1) with its registration access token; never the secret' })
  @ApiOkResponse({ type: ClientConfigurationDto, headers: NO_STORE_HEADERS })
  @ApiOAuthErrorResponse(401, MANAGEMENT_REFUSED)
  @ApiOAuthUnavailableResponse()
  read(@Param('clientId') clientId: string, @RequestHeader('authorization') authorization?: string) {
    return this.registrations.read(clientId, authorization);
  }

  @Put(':clientId')
  @NoStore()
  @ApiBearerAuth()
  @ApiOperation({ summary: 'Replace a registration (RFC 7592 §2.2): the whole metadata, `client_id` included; a field left out goes back to its default' })
  @ApiBody({ type: ClientConfigurationDto })
  @ApiOkResponse({ type: ClientConfigurationDto, headers: NO_STORE_HEADERS })
  @ApiOAuthErrorResponse(400, '`invalid_client_metadata` (as at registration; a `client_id` not this one, a `client_secret` not its own, a public client made confidential or back) or `invalid_redirect_uri`')
  @ApiOAuthErrorResponse(401, MANAGEMENT_REFUSED)
  @ApiOAuthUnavailableResponse()
  replace(@Param('clientId') clientId: string, @Body() body: unknown, @RequestedBy() requester: Requester, @RequestHeader('authorization') authorization?: string) {
    return this.registrations.replace(clientId, authorization, body, requester);
  }

  @Delete(':clientId')
  @NoStore()
  @HttpCode(204)
  @ApiBearerAuth()
  @ApiOperation({ summary: 'Delete a registration (RFC 7592 §2.3), as client:delete: its grants and tokens stop working, its streams close on every instance' })
  @ApiNoContentResponse({ description: 'deleted' })
  @ApiOAuthErrorResponse(401, MANAGEMENT_REFUSED)
  @ApiOAuthUnavailableResponse()
  async delete(@Param('clientId') clientId: string, @RequestedBy() requester: Requester, @RequestHeader('authorization') authorization?: string): Promise<void> {
    await this.registrations.delete(clientId, authorization, requester);
  }
}
