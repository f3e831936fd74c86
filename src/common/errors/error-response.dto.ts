import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** The service's error body outside the OAuth endpoints (HttpExceptionFilter). */
export class ErrorResponseDto {
  @ApiProperty({ example: 'Validation failed', description: 'what went wrong; a 500 says only "Internal server error"' })
  message: string;

  @ApiPropertyOptional({ type: [String], example: ['correlationId must be a UUID'], description: 'field errors, on a 400 of failed validation only' })
  errors?: string[];

  @ApiProperty({ example: '6f1c2a9e-3b7d-4c1e-9a51-0d2f8e4b7c3a', description: 'the request id, also sent as the X-Request-Id header; the log lines of the request carry it' })
  correlationId: string;
}
