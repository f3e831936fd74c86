import { ApiPropertyOptional } from '@nestjs/swagger';

/** The form of POST /sso/logout, for the OpenAPI description (RP-Initiated Logout 1.0 §2, and the confirmation). */
export class LogoutFormDto {
  @ApiPropertyOptional({ description: 'an ID token the service issued to the client (expired ones too): who asks to sign out' })
  id_token_hint?: string;

  @ApiPropertyOptional({ description: 'the client, when no id_token_hint names it' })
  client_id?: string;

  @ApiPropertyOptional({ description: 'one the client registered with --post-logout-redirect, exactly' })
  post_logout_redirect_uri?: string;

  @ApiPropertyOptional({ description: 'returned to post_logout_redirect_uri as sent' })
  state?: string;

  @ApiPropertyOptional({ description: 'the "Sign out?" confirmation: its CSRF token, equal to its cookie\'s' })
  csrf_token?: string;
}
