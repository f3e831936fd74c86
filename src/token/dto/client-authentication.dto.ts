import { ApiPropertyOptional } from '@nestjs/swagger';

/**
 * The form fields of client_secret_post (RFC 6749 §2.3.1). A client authenticates either so or
 * with HTTP Basic (client_secret_basic), never both: a client_secret in the body beside an
 * Authorization header is invalid_request.
 */
export class ClientAuthenticationDto {
  @ApiPropertyOptional({ description: 'the client, for client_secret_post; with Basic it may be repeated here, but must then be the same' })
  client_id?: string;

  @ApiPropertyOptional({ description: 'the client secret, for client_secret_post (not together with an Authorization header)' })
  client_secret?: string;
}
