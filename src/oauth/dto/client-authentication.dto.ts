import { ApiPropertyOptional } from '@nestjs/swagger';

/**
 * The form fields of client_secret_post (RFC 6749 §2.3.1). A confidential client authenticates
 * either so or with HTTP Basic (client_secret_basic), never both: a client_secret in the body
 * beside an Authorization header is invalid_request. A public client (token_endpoint_auth_method
 * `none`) sends its client_id alone.
 */
export class ClientAuthenticationDto {
  @ApiPropertyOptional({ description: 'the client, for client_secret_post, and alone for a public client (token_endpoint_auth_method none); with Basic it may be repeated here, but must then be the same' })
  client_id?: string;

  @ApiPropertyOptional({ description: 'the client secret, for client_secret_post (not together with an Authorization header; never for a public client)' })
  client_secret?: string;
}
