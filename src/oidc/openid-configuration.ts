import type { Env } from '../config/env.js';
import { authorizationServerMetadata } from '../token/authorization-server-metadata.js';
import { OPENID_SCOPES } from '../oauth/scope.js';
import { CLAIMS_SUPPORTED } from '../users/claims.js';
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
    // The standard scopes every client holds (src/oauth/scope.ts), in the order of the specification.
    scopes_supported: [...OPENID_SCOPES],
    claims_supported: CLAIMS_SUPPORTED,
    // Every client sees a user under the same `sub`, their id.
    subject_types_supported: ['public'],
    // ID tokens: RS256 by default, ES256 for a client registered with --id-token-alg ES256.
    id_token_signing_alg_values_supported: ['RS256', 'ES256'],
    // consent and select_account both show "Continue as USER" or "Use another account".
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    // RFC 9207: `iss` in every answer to a standard authorization request, so a client can tell which server answered.
    // (The helper's link answers as its own contract says: `code` and `state`.)
    authorization_response_iss_parameter_supported: true,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    claims_parameter_supported: false,
  };
}
