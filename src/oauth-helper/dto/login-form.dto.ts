import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** The forms of POST /sso/authorize, for the OpenAPI description: the sign-in form, an identity provider's button, or the confirmation after a sign-in there. */
export class LoginFormDto {
  @ApiProperty({ enum: ['code'] })
  response_type: 'code';

  @ApiProperty()
  client_id: string;

  @ApiProperty({ description: 'the state of the sign-in link (a JWT the helper configuration issued)' })
  state: string;

  @ApiProperty({ description: "the page's CSRF token, equal to its cookie's (double submit)" })
  csrf_token: string;

  @ApiPropertyOptional({ description: 'the sign-in form, when the client signs in locally' })
  username?: string;

  @ApiPropertyOptional({ description: 'the sign-in form, when the client signs in locally' })
  password?: string;

  @ApiPropertyOptional({ description: "an identity provider's button: its name (the answer is a redirect to that provider)" })
  idp?: string;

  @ApiPropertyOptional({ enum: ['continue', 'another'], description: 'the "Continue as USER" page of a browser signed in here: go on as that user, or sign in as someone else' })
  session?: 'continue' | 'another';

  @ApiPropertyOptional({ description: 'the "Continue to CLIENT?" page after a sign-in at an identity provider: its one-time value' })
  confirmation?: string;

  @ApiPropertyOptional({ enum: ['continue', 'cancel'], description: 'with `confirmation`: the button pressed' })
  decision?: 'continue' | 'cancel';
}
