import { ApiResponse, type HeadersObject } from '@nestjs/swagger';
import { RETRY_AFTER_HEADER } from '../common/errors/api-error-response.decorator.js';
import { OAuthErrorDto } from './dto/oauth-error.dto.js';

/** The headers of every answer of an OAuth endpoint, errors included (RFC 6749 §5.1). */
export const NO_STORE_HEADERS: HeadersObject = {
  'Cache-Control': { description: '`no-store`', schema: { type: 'string' } },
  Pragma: { description: '`no-cache`', schema: { type: 'string' } },
};

/** An error of an OAuth endpoint: `{ error, error_description }`, never cached. */
export const ApiOAuthErrorResponse = (status: number, description: string, headers?: HeadersObject) =>
  ApiResponse({ status, description, type: OAuthErrorDto, headers: { ...NO_STORE_HEADERS, ...headers } });

/** 503 `temporarily_unavailable` with Retry-After: the database is away or busy. */
export const ApiOAuthUnavailableResponse = () =>
  ApiOAuthErrorResponse(503, '`temporarily_unavailable`: the database is away or busy, or the request was not answered within REQUEST_TIMEOUT_MS', RETRY_AFTER_HEADER);
