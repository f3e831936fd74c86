import { applyDecorators } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConsumes, ApiPayloadTooLargeResponse, ApiUnauthorizedResponse, ApiUnsupportedMediaTypeResponse } from '@nestjs/swagger';
import { NoStore } from './no-store.decorator.js';

/**
 * An OAuth endpoint taking an RFC 6749 form: never cached, and its errors in the RFC 6749 §5.2
 * format, whatever refused the request (the handler, or Fastify before it: 413, 415).
 */
export const OAuthFormRoute = () =>
  applyDecorators(
    NoStore(),
    ApiConsumes('application/x-www-form-urlencoded'),
    ApiBadRequestResponse({ description: 'RFC 6749 §5.2 `{error, error_description}`' }),
    ApiUnauthorizedResponse({ description: '`invalid_client`, with `WWW-Authenticate` when Basic was used' }),
    ApiPayloadTooLargeResponse({ description: '`invalid_request`: the body is over 64 KiB' }),
    ApiUnsupportedMediaTypeResponse({ description: '`invalid_request`: the body is not application/x-www-form-urlencoded' }),
  );
