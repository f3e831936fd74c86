import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ClientAuthenticationDto } from '../../oauth/dto/client-authentication.dto.js';

/** POST /sso/device_authorization (RFC 8628 §3.1), for the OpenAPI description; the service reads the form itself. */
export class DeviceAuthorizationRequestDto extends ClientAuthenticationDto {
  @ApiPropertyOptional({ description: 'space-delimited scopes the client is registered with, or OpenID scopes (`openid` adds an ID token to the device\'s token answer); shown to the user on the approval form', example: 'openid voyages:read' })
  scope?: string;
}

/** RFC 8628 §3.2. */
export class DeviceAuthorizationResponseDto {
  @ApiProperty({ description: 'for the device only: it polls POST /sso/token with it (256 random bits, base64url)' })
  device_code: string;

  @ApiProperty({ example: 'BCDF-GHJK', description: '8 of the consonants BCDFGHJKLMNPQRSTVWXZ, shown as XXXX-XXXX; read ignoring case, spaces and dashes' })
  user_code: string;

  @ApiProperty({ example: 'http://localhost:3000/sso/device', description: 'FRONTEND_URL/sso/device' })
  verification_uri: string;

  @ApiProperty({ example: 'http://localhost:3000/sso/device?user_code=BCDF-GHJK', description: 'verification_uri with the code filled in (for a QR code)' })
  verification_uri_complete: string;

  @ApiProperty({ example: 600, description: 'seconds the codes live: DEVICE_CODE_TTL' })
  expires_in: number;

  @ApiProperty({ example: 5, description: 'seconds between polls: DEVICE_POLL_INTERVAL (each slow_down adds 5)' })
  interval: number;
}
