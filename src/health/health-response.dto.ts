import { ApiProperty } from '@nestjs/swagger';

/** The health response the notification service defines. */
export class HealthResponseDto {
  @ApiProperty({ enum: ['up', 'down'] })
  status: 'up' | 'down';

  @ApiProperty({ example: '0.1.0', description: 'package version' })
  version: string;

  @ApiProperty({ example: 'all components healthy' })
  info: string;

  @ApiProperty({ example: '2026-11-21T05:00:00.000Z', description: 'RFC 3339, UTC' })
  timestamp: string;

  @ApiProperty({ example: 'production', description: 'APP_ENV' })
  env: string;
}

/** GET /health/live. */
export class LivenessResponseDto {
  @ApiProperty({ enum: ['up'] })
  status: 'up';
}
