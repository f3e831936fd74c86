import { ApiProperty } from '@nestjs/swagger';

/** POST /external/oauth2helper/config/{client_id}. */
export class HelperConfigDto {
  @ApiProperty({ description: 'FRONTEND_URL/sso/authorize?response_type=code&client_id=…&state=…: the sign-in link to open in a browser' })
  authorize_url: string;

  @ApiProperty({ description: 'API_URL/external/oauth2helper/code/get/{client_id}?state=…: where a device without a redirect URL polls for its code' })
  code_url: string;

  @ApiProperty({ description: 'FRONTEND_URL/sso/token' })
  accesstoken_request_url: string;

  @ApiProperty({ example: 4, description: 'seconds code_url must be polled apart: CODE_POLL_MIN_INTERVAL' })
  interval: number;

  @ApiProperty({ example: 600, description: 'seconds the sign-in link (its state) stays valid: STATE_TTL' })
  expires_in: number;
}

/** A code collected by polling (200, exactly once). */
export class PolledCodeDto {
  @ApiProperty({ description: 'the authorization code; valid AUTH_CODE_TTL seconds from now' })
  code: string;
}

/** The poll's 404: no code for this state (yet, or any more), or an unknown client. */
export class NoCodeDto {
  @ApiProperty({ enum: ['not_found'] })
  error: 'not_found';

  @ApiProperty({ example: 'no authorization code is available for this state' })
  error_description: string;
}
