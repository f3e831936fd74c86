import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/**
 * The forms of the verification page (POST /sso/device), for the OpenAPI description. Which step
 * a post is, is told by the fields sent: `decision` → step 3, `session`, `idp`, `username` or
 * `password` → step 2, else step 1.
 */
export class DeviceVerificationFormDto {
  @ApiProperty({ description: "the page's CSRF token, equal to its cookie's (double submit)" })
  csrf_token: string;

  @ApiProperty({ example: 'BCDF-GHJK', description: 'the code the device shows (every step carries it)' })
  user_code: string;

  @ApiPropertyOptional({
    enum: ['continue', 'another'],
    description: 'step 2 within a browser session, the "Continue as USER" page: `continue` → the approval form for the session\'s user; `another` → the sign-in form (or the client\'s only identity provider)',
  })
  session?: 'continue' | 'another';

  @ApiPropertyOptional({ description: 'step 2, the sign-in form' })
  username?: string;

  @ApiPropertyOptional({ description: 'step 2, the sign-in form' })
  password?: string;

  @ApiPropertyOptional({ description: "step 2, an identity provider's button: its name (the answer is a redirect to that provider)" })
  idp?: string;

  @ApiPropertyOptional({ enum: ['approve', 'deny'], description: 'step 3, the approval form' })
  decision?: 'approve' | 'deny';

  @ApiPropertyOptional({ description: 'step 3: the one-time value of the approval form, valid for the latest sign-in only' })
  approval?: string;
}
