import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ClientAuthenticationDto } from '../../oauth/dto/client-authentication.dto.js';

/** POST /sso/introspect (RFC 7662 §2.1) and POST /sso/revoke (RFC 7009 §2.1). */
export class TokenFormDto extends ClientAuthenticationDto {
  @ApiProperty({ description: 'an access token (a JWT) or a refresh token this service issued to the calling client; the service tells which it is' })
  token: string;
}

/** RFC 7662 §2.2. Only `active` when the token is not active, or not the calling client's. */
export class IntrospectionResponseDto {
  @ApiProperty()
  active: boolean;

  @ApiPropertyOptional({ example: 'notification:subscribe' })
  scope?: string;

  @ApiPropertyOptional()
  client_id?: string;

  @ApiPropertyOptional({ description: "the portal user's id (user grants) or the client's (client credentials)" })
  sub?: string;

  @ApiPropertyOptional({ description: 'expiry, seconds since the epoch' })
  exp?: number;

  @ApiPropertyOptional({ description: 'access tokens only: issued at, seconds since the epoch' })
  iat?: number;

  @ApiPropertyOptional({ description: 'access tokens only: IDENTITY_URL' })
  iss?: string;

  @ApiPropertyOptional({ description: 'access tokens only: API_URL, or the resource asked for' })
  aud?: string;

  @ApiPropertyOptional({ description: 'access tokens only' })
  jti?: string;

  @ApiPropertyOptional({ enum: ['Bearer'], description: 'access tokens only (a refresh token has no token type)' })
  token_type?: 'Bearer';
}
