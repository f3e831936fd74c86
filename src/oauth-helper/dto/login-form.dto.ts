import { ApiProperty } from '@nestjs/swagger';

/** The login form of POST /sso/authorize, for the OpenAPI description (the page posts exactly these fields). */
export class LoginFormDto {
  @ApiProperty({ enum: ['code'] })
  response_type: 'code';

  @ApiProperty()
  client_id: string;

  @ApiProperty({ description: 'the state of the sign-in link (a JWT the helper configuration issued)' })
  state: string;

  @ApiProperty({ description: "the page's CSRF token, equal to its cookie's (double submit)" })
  csrf_token: string;

  @ApiProperty()
  username: string;

  @ApiProperty()
  password: string;
}
