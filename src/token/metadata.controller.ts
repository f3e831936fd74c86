import { Controller, Get, Header, NotFoundException, Param } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { DEVICE_CODE_GRANT } from '../clients/client.entity.js';
import { Env } from '../config/env.js';
import { AuthorizationServerMetadataDto } from './dto/authorization-server-metadata.dto.js';

@ApiTags('sso')
@Controller('.well-known')
export class MetadataController {
  constructor(private readonly env: Env) {}

  @Get('oauth-authorization-server')
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({
    summary: 'Authorization server metadata (RFC 8414)',
    description: 'When IDENTITY_URL has a path, the same document is also served at this path followed by that path (RFC 8414 §3.1); any other path below it is a 404.',
  })
  @ApiOkResponse({ type: AuthorizationServerMetadataDto, headers: { 'Cache-Control': { description: '`public, max-age=300`', schema: { type: 'string' } } } })
  metadata(): AuthorizationServerMetadataDto {
    return this.document();
  }

  /** RFC 8414 §3.1: for an issuer with a path, the metadata lives under the well-known path plus that path. */
  @Get('oauth-authorization-server/*')
  @Header('Cache-Control', 'public, max-age=300')
  @ApiExcludeEndpoint()
  metadataForIssuerPath(@Param('*') issuerPath: string): AuthorizationServerMetadataDto {
    if (`/${issuerPath}` !== new URL(this.env.identityUrl).pathname) throw new NotFoundException();
    return this.document();
  }

  private document(): AuthorizationServerMetadataDto {
    const secretMethods = ['client_secret_basic', 'client_secret_post'];
    // A public client names itself with client_id alone (`none`), except to introspect (RFC 7662 §2.1).
    const anyClient = [...secretMethods, 'none'];
    return {
      issuer: this.env.identityUrl,
      authorization_endpoint: `${this.env.frontendUrl}/sso/authorize`,
      token_endpoint: `${this.env.frontendUrl}/sso/token`,
      device_authorization_endpoint: `${this.env.frontendUrl}/sso/device_authorization`,
      introspection_endpoint: `${this.env.frontendUrl}/sso/introspect`,
      revocation_endpoint: `${this.env.frontendUrl}/sso/revoke`,
      jwks_uri: `${this.env.apiUrl}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token', DEVICE_CODE_GRANT],
      token_endpoint_auth_methods_supported: anyClient,
      introspection_endpoint_auth_methods_supported: secretMethods,
      revocation_endpoint_auth_methods_supported: anyClient,
      code_challenge_methods_supported: ['S256'],
      service_documentation: `${this.env.apiUrl}/docs`,
    };
  }
}
