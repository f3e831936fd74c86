import type { Env } from '../config/env.js';
import { authorizationServerMetadata } from '../token/authorization-server-metadata.js';
import { CLAIMS_SUPPORTED, OPENID_SCOPE, SCOPE_CLAIMS } from './claims.js';
import type { OpenIdConfigurationDto } from './dto/openid-configuration.dto.js';

/** Where OpenID Connect Discovery §4 looks for the document, below the issuer. */
export const DISCOVERY_PATH = '/.well-known/openid-configuration';

/**
 * OpenID Connect Discovery 1.0 §3: the RFC 8414 document as it is (its issuer, endpoints and
 * methods: one source for both) plus what OpenID Connect adds.
 */
export function openIdConfiguration(env: Env): OpenIdConfigurationDto {
  return {
    ...authorizationServerMetadata(env),
    userinfo_endpoint: `${env.frontendUrl}/sso/userinfo`,
    end_session_endpoint: `${env.frontendUrl}/sso/logout`,
    scopes_supported: [OPENID_SCOPE, ...Object.keys(SCOPE_CLAIMS)],
    claims_supported: CLAIMS_SUPPORTED,
    // Every client sees a user under the same `sub`, their id.
    subject_types_supported: ['public'],
    // ID tokens: RS256 by default, ES256 for a client registered with --id-token-alg ES256.
    id_token_signing_alg_values_supported: ['RS256', 'ES256'],
    prompt_values_supported: ['none', 'login', 'consent'],
    // RFC 9207: `iss` in every authorization response, so a client can tell which server answered.
    authorization_response_iss_parameter_supported: true,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    claims_parameter_supported: false,
  };
}
