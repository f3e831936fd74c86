import { ApiProperty } from '@nestjs/swagger';
import { OAUTH_ERROR_CODES, type OAuthErrorCode } from '../oauth-error.js';

/** RFC 6749 §5.2: the error body of every OAuth endpoint (OAuthExceptionFilter). */
export class OAuthErrorDto {
  @ApiProperty({ enum: OAUTH_ERROR_CODES, example: 'invalid_request' })
  error: OAuthErrorCode;

  @ApiProperty({ example: 'missing parameter grant_type', description: 'for a person reading logs, not for programs' })
  error_description: string;
}
