import { ApiProperty } from '@nestjs/swagger';

/** RFC 8414 §2, as GET /.well-known/oauth-authorization-server answers it. */
export class AuthorizationServerMetadataDto {
  @ApiProperty({ description: 'IDENTITY_URL' })
  issuer: string;

  @ApiProperty({ description: 'FRONTEND_URL/sso/authorize (accepts only sign-in links from the helper configuration route)' })
  authorization_endpoint: string;

  @ApiProperty({ description: 'FRONTEND_URL/sso/token' })
  token_endpoint: string;

  @ApiProperty({ description: 'FRONTEND_URL/sso/device_authorization' })
  device_authorization_endpoint: string;

  @ApiProperty({ description: 'FRONTEND_URL/sso/introspect' })
  introspection_endpoint: string;

  @ApiProperty({ description: 'FRONTEND_URL/sso/revoke' })
  revocation_endpoint: string;

  @ApiProperty({ description: 'IDENTITY_URL/sso/register: dynamic client registration (RFC 7591) with a clients:register token' })
  registration_endpoint: string;

  @ApiProperty({ description: 'API_URL/.well-known/jwks.json' })
  jwks_uri: string;

  @ApiProperty({ type: [String], example: ['code'] })
  response_types_supported: string[];

  @ApiProperty({ type: [String], example: ['query'] })
  response_modes_supported: string[];

  @ApiProperty({ type: [String], example: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'] })
  grant_types_supported: string[];

  @ApiProperty({ type: [String], example: ['client_secret_basic', 'client_secret_post', 'none'], description: '`none`: a public client (PKCE instead of a secret)' })
  token_endpoint_auth_methods_supported: string[];

  @ApiProperty({ type: [String], example: ['client_secret_basic', 'client_secret_post'] })
  introspection_endpoint_auth_methods_supported: string[];

  @ApiProperty({ type: [String], example: ['client_secret_basic', 'client_secret_post', 'none'] })
  revocation_endpoint_auth_methods_supported: string[];

  @ApiProperty({ type: [String], example: ['S256'] })
  code_challenge_methods_supported: string[];

  @ApiProperty({ description: 'API_URL/docs' })
  service_documentation: string;
}
