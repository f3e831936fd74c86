import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** The OpenAPI description of a registration's body (RFC 7591 §2); client-metadata.ts reads it. */
export class ClientMetadataDto {
  @ApiProperty({ example: 'Bridge tablet, MV Nordic Star', description: 'required: the name operators and the approval page show; unique' })
  client_name: string;

  @ApiPropertyOptional({
    type: [String],
    example: ['authorization_code', 'refresh_token'],
    description: '`authorization_code`, `refresh_token`, `client_credentials`, `urn:ietf:params:oauth:grant-type:device_code`; default `authorization_code refresh_token`',
  })
  grant_types?: string[];

  @ApiPropertyOptional({ type: [String], example: ['code'], description: '`code` with the authorization_code grant (the default), nothing else' })
  response_types?: string[];

  @ApiPropertyOptional({ type: [String], example: ['https://app.example.com/callback'], description: 'exact redirect URIs of the standard authorization request' })
  redirect_uris?: string[];

  @ApiPropertyOptional({
    type: [String],
    example: ['http://192.168.0.0/16:*/callback'],
    description: "the helper's redirect patterns, as `client:create --redirect`: an exact URL, or a private or loopback address range with an optional `*` port",
  })
  voyage_redirect_patterns?: string[];

  @ApiPropertyOptional({ type: [String], example: ['https://app.example.com/signed-out'], description: 'where RP-initiated logout may send the browser' })
  post_logout_redirect_uris?: string[];

  @ApiPropertyOptional({ example: 'notification:subscribe', description: 'space-separated; each among REGISTRATION_SCOPES (the OpenID Connect scopes are every client\'s already)' })
  scope?: string;

  @ApiPropertyOptional({ enum: ['client_secret_basic', 'client_secret_post', 'none'], example: 'client_secret_basic', description: '`none`: a public client (no secret, PKCE)' })
  token_endpoint_auth_method?: string;

  @ApiPropertyOptional({ enum: ['RS256', 'ES256'], example: 'RS256' })
  id_token_signed_response_alg?: string;
}

/** A registered client's metadata (RFC 7591 §3.2.1, RFC 7592 §3). */
export class ClientConfigurationDto extends ClientMetadataDto {
  @ApiProperty({ example: 'n2J0c1hQ8aR7vJx5mK3LwA' })
  client_id: string;

  @ApiProperty({ example: 1795500000, description: 'when it was registered, in seconds since the epoch' })
  client_id_issued_at: number;

  @ApiProperty({ example: 0, description: 'never expires' })
  client_secret_expires_at: number;

  @ApiProperty({ example: 'https://id.example.com/sso/register/n2J0c1hQ8aR7vJx5mK3LwA', description: 'where the client reads, replaces or deletes its registration (RFC 7592)' })
  registration_client_uri: string;

  @ApiProperty({ example: 'Rk3v…', description: 'the bearer token for registration_client_uri; it works nowhere else' })
  registration_access_token: string;
}

/** The 201 of a registration: the configuration and, for a confidential client, its secret, shown this once. */
export class RegistrationDto extends ClientConfigurationDto {
  @ApiPropertyOptional({ example: 'q8V…', description: 'absent for a public client; shown only in this answer (stored hashed)' })
  client_secret?: string;
}
