import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** The token response of a user's grant (POST /sso/token), RFC 6749 §5.1. */
export class UserTokenResponseDto {
  @ApiProperty({ description: 'a JWT (RFC 9068, `typ: at+jwt`) signed with a key of /.well-known/jwks.json' })
  access_token: string;

  @ApiProperty({ example: 3600, description: 'seconds; always 3600' })
  expires_in: number;

  @ApiProperty({ enum: ['bearer'] })
  token_type: 'bearer';

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    description: "the grant's scope. Helper flow: always present, `null` when the grant has none; device flow: absent when the grant has none",
  })
  scope?: string | null;

  @ApiPropertyOptional({
    description:
      'the next refresh token (256 random bits, base64url): always in the helper flow; in the device flow only for a client registered with the refresh_token grant. Each one is good for one refresh',
  })
  refresh_token?: string;
}

/** The client-credentials token response (POST /public/api/oauth2/token). */
export class ClientTokenResponseDto {
  @ApiProperty({ description: 'a JWT (RFC 9068) whose `sub` and `client_id` are the client' })
  access_token: string;

  @ApiProperty({ example: 3600, description: 'seconds: CLIENT_TOKEN_TTL' })
  expires_in: number;

  @ApiProperty({ enum: ['Bearer'] })
  token_type: 'Bearer';

  @ApiProperty({ example: 'notification:subscribe' })
  scope: string;

  @ApiPropertyOptional({ description: 'the resource asked for, as configured in ALLOWED_RESOURCES; absent when none was asked for' })
  resource?: string;
}
