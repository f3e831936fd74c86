import { ApiProperty } from '@nestjs/swagger';
import { AuthorizationServerMetadataDto } from '../../token/dto/authorization-server-metadata.dto.js';

/** OpenID Connect Discovery 1.0 §3: the RFC 8414 document's fields (the same values) and OpenID Connect's own. */
export class OpenIdConfigurationDto extends AuthorizationServerMetadataDto {
  @ApiProperty({ description: 'FRONTEND_URL/sso/userinfo' })
  userinfo_endpoint: string;

  @ApiProperty({ description: 'FRONTEND_URL/sso/logout (RP-Initiated Logout 1.0)' })
  end_session_endpoint: string;

  @ApiProperty({ type: [String], example: ['openid', 'profile', 'email'] })
  scopes_supported: string[];

  @ApiProperty({ type: [String], example: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'sid', 'name', 'preferred_username', 'updated_at', 'email', 'email_verified'] })
  claims_supported: string[];

  @ApiProperty({ type: [String], example: ['public'] })
  subject_types_supported: string[];

  @ApiProperty({ type: [String], example: ['RS256', 'ES256'], description: 'RS256 unless the client was registered with --id-token-alg ES256' })
  id_token_signing_alg_values_supported: string[];

  @ApiProperty({ type: [String], example: ['none', 'login', 'consent'] })
  prompt_values_supported: string[];

  @ApiProperty({ description: 'RFC 9207: every authorization response carries `iss`', example: true })
  authorization_response_iss_parameter_supported: boolean;

  @ApiProperty({ example: false })
  request_parameter_supported: boolean;

  @ApiProperty({ example: false })
  request_uri_parameter_supported: boolean;

  @ApiProperty({ example: false })
  claims_parameter_supported: boolean;
}
