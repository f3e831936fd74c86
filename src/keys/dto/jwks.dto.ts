import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** A public signing key (RFC 7517): EC P-256 for ES256, RSA for RS256. */
export class JwkDto {
  @ApiProperty({ enum: ['EC', 'RSA'] })
  kty: string;

  @ApiProperty({ description: 'the `kid` in the header of the JWTs it verifies' })
  kid: string;

  @ApiProperty({ enum: ['ES256', 'RS256'] })
  alg: string;

  @ApiProperty({ enum: ['sig'] })
  use: string;

  @ApiPropertyOptional({ enum: ['P-256'], description: 'EC only' })
  crv?: string;

  @ApiPropertyOptional({ description: 'EC only' })
  x?: string;

  @ApiPropertyOptional({ description: 'EC only' })
  y?: string;

  @ApiPropertyOptional({ description: 'RSA only' })
  n?: string;

  @ApiPropertyOptional({ description: 'RSA only' })
  e?: string;
}

/** The JWK set: the active key of each algorithm, a rotated-in key waiting to sign, and retired keys whose tokens may still be valid, never revoked keys. */
export class JwksDto {
  @ApiProperty({ type: [JwkDto] })
  keys: JwkDto[];
}
