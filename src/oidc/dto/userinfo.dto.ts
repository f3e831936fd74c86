import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** POST /sso/userinfo with the token in the body (RFC 6750 §2.2) instead of the Authorization header. */
export class UserinfoFormDto {
  @ApiPropertyOptional({ description: 'the access token, when it is not in the Authorization header (never in both)' })
  access_token?: string;
}

/** OpenID Connect Core §5.3.2: the user's claims that the token's scopes allow. */
export class UserinfoDto {
  @ApiProperty({ description: "the portal user's id: the `sub` of the access token and of the ID token" })
  sub: string;

  @ApiPropertyOptional({ description: "scope `profile`: the provider's `name` for a user signed in through an identity provider (when it gave one), else the username" })
  name?: string;

  @ApiPropertyOptional({ description: "scope `profile`: the username, or the provider's `preferred_username` (when it gave one)" })
  preferred_username?: string;

  @ApiPropertyOptional({ description: 'scope `profile`: when these claims last changed, seconds since the epoch' })
  updated_at?: number;

  @ApiPropertyOptional({ description: 'scope `email`: the e-mail address the identity provider gave (local users have none)' })
  email?: string;

  @ApiPropertyOptional({ description: 'scope `email`: true only when the identity provider said the address is verified' })
  email_verified?: boolean;
}
