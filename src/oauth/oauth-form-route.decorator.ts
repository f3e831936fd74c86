import { applyDecorators, type Type } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiSecurity } from '@nestjs/swagger';
import { ApiOAuthErrorResponse, ApiOAuthUnavailableResponse } from './api-oauth-error-response.decorator.js';
import { NoStore } from './no-store.decorator.js';

/** The OpenAPI security scheme of client_secret_basic (RFC 6749 §2.3.1). */
export const CLIENT_SECRET_BASIC = 'client_secret_basic';

/** invalid_request reasons every form route shares. */
export const FORM_INVALID_REQUEST =
  '`invalid_request`: a repeated parameter, a NUL character, a missing parameter, or client credentials both in the header and in the body';

/**
 * An OAuth endpoint taking an RFC 6749 form from an authenticated client: never cached, and its
 * errors in the RFC 6749 §5.2 format, whatever refused the request (the handler, or Fastify
 * before it: 413, 415). The client authenticates with HTTP Basic or with client_id and
 * client_secret in the form; `{}` in the security list stands for the latter.
 */
export const OAuthFormRoute = (form: Type, badRequest: string) =>
  applyDecorators(
    NoStore(),
    ApiConsumes('application/x-www-form-urlencoded'),
    ApiBody({ type: form }),
    ApiSecurity(CLIENT_SECRET_BASIC),
    ApiSecurity({}),
    ApiOAuthErrorResponse(400, badRequest),
    ApiOAuthErrorResponse(401, '`invalid_client`: no, unknown, disabled or wrong client credentials, or malformed Basic credentials', {
      'WWW-Authenticate': { description: 'when the client used HTTP Basic: `Basic realm="voyage-connect", charset="UTF-8"`', schema: { type: 'string' } },
    }),
    ApiOAuthErrorResponse(413, '`invalid_request`: the body is over 64 KiB'),
    ApiOAuthErrorResponse(415, '`invalid_request`: a body that is not a form (JSON, text, any other media type): send application/x-www-form-urlencoded'),
    ApiOAuthUnavailableResponse(),
  );
