import { DEVICE_CODE_GRANT } from '../clients/client.entity.js';
import type { Env } from '../config/env.js';
import type { AuthorizationServerMetadataDto } from './dto/authorization-server-metadata.dto.js';

/** Both metadata documents may be kept for five minutes. */
export const METADATA_CACHE_CONTROL = 'public, max-age=300';

/** A confidential client's credentials: HTTP Basic or the form. */
const SECRET_METHODS = ['client_secret_basic', 'client_secret_post'];
/** A public client names itself with client_id alone (`none`, PKCE instead), except to introspect (RFC 7662 §2.1). */
const ANY_CLIENT_METHODS = [...SECRET_METHODS, 'none'];

/**
 * The one description of this authorization server: RFC 8414 serves it as it is, OpenID Connect
 * Discovery adds its own fields to it, so the issuer and the endpoints of both documents cannot
 * drift apart. The issuer is IDENTITY_URL, the `iss` of every token the service signs.
 */
export function authorizationServerMetadata(env: Env): AuthorizationServerMetadataDto {
  return {
    issuer: env.identityUrl,
    authorization_endpoint: `${env.frontendUrl}/sso/authorize`,
    token_endpoint: `${env.frontendUrl}/sso/token`,
    device_authorization_endpoint: `${env.frontendUrl}/sso/device_authorization`,
    introspection_endpoint: `${env.frontendUrl}/sso/introspect`,
    revocation_endpoint: `${env.frontendUrl}/sso/revoke`,
    registration_endpoint: `${env.identityUrl}/sso/register`,
    jwks_uri: `${env.apiUrl}/.well-known/jwks.json`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token', DEVICE_CODE_GRANT],
    token_endpoint_auth_methods_supported: ANY_CLIENT_METHODS,
    introspection_endpoint_auth_methods_supported: SECRET_METHODS,
    revocation_endpoint_auth_methods_supported: ANY_CLIENT_METHODS,
    code_challenge_methods_supported: ['S256'],
    service_documentation: `${env.apiUrl}/docs`,
  };
}
