import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { DEVICE_CODE_GRANT } from '../../clients/client.entity.js';
import { ClientAuthenticationDto } from '../../oauth/dto/client-authentication.dto.js';

/*
 * The forms of the token endpoints, for the OpenAPI description. The services read the body
 * themselves (readFormBody): RFC 6749 §3.2 wants unknown parameters ignored, empty ones treated
 * as absent and repeated ones refused, which a validated DTO would not do.
 */

/** POST /sso/token: one form for the three grants; each grant reads only its own fields. */
export class SsoTokenRequestDto extends ClientAuthenticationDto {
  @ApiProperty({ enum: ['authorization_code', 'refresh_token', DEVICE_CODE_GRANT] })
  grant_type: string;

  @ApiPropertyOptional({ description: 'authorization_code: the code from the redirect or the code poll' })
  code?: string;

  @ApiPropertyOptional({ description: 'authorization_code: optional; when sent it must equal the redirect_url the code is bound to' })
  redirect_uri?: string;

  @ApiPropertyOptional({
    description: 'authorization_code: the PKCE verifier (RFC 7636, 43–128 characters); required when the sign-in link had a code_challenge, refused when it had none',
  })
  code_verifier?: string;

  @ApiPropertyOptional({ description: 'refresh_token: the refresh token, rotated by this request' })
  refresh_token?: string;

  @ApiPropertyOptional({ description: `${DEVICE_CODE_GRANT}: the device_code from POST /sso/device_authorization` })
  device_code?: string;

  @ApiPropertyOptional({
    description:
      'authorization_code: space-delimited scopes of the new grant, each one the client is registered with; refresh_token: a narrower scope than the grant\'s (never a wider one); ignored by the device grant, whose scope was asked for at /sso/device_authorization',
    example: 'voyages:read',
  })
  scope?: string;
}

/** POST /public/api/oauth2/token: client credentials (RFC 6749 §4.4) with an optional resource (RFC 8707). */
export class ClientCredentialsRequestDto extends ClientAuthenticationDto {
  @ApiProperty({ enum: ['client_credentials'] })
  grant_type: string;

  @ApiPropertyOptional({ description: 'space-delimited scopes the client is registered with; absent: DEFAULT_CLIENT_SCOPE', example: 'notification:publish' })
  scope?: string;

  @ApiPropertyOptional({ description: 'RFC 8707: a resource server from ALLOWED_RESOURCES (default: API_URL); it becomes the token\'s `aud`', format: 'uri' })
  resource?: string;
}
