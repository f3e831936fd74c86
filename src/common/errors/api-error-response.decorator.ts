import { ApiResponse, type HeadersObject } from '@nestjs/swagger';
import { ErrorResponseDto } from './error-response.dto.js';
import { RETRY_AFTER_S } from './temporarily-unavailable.js';

/** The Retry-After header of a 429 or 503, for the OpenAPI description. */
export const RETRY_AFTER_HEADER: HeadersObject = {
  'Retry-After': { description: 'seconds to wait before trying again', schema: { type: 'integer', example: RETRY_AFTER_S } },
};

/** An error answered in the service's own format, `{ message, errors?, correlationId }`. */
export const ApiErrorResponse = (status: number, description: string, headers?: HeadersObject) =>
  ApiResponse({ status, description, type: ErrorResponseDto, headers });

/** 503 with Retry-After: the database is away or busy, or the request outlived REQUEST_TIMEOUT_MS. */
export const ApiUnavailableResponse = () =>
  ApiErrorResponse(503, 'the database is away or busy, or the request was not answered within REQUEST_TIMEOUT_MS: try again after `Retry-After`', RETRY_AFTER_HEADER);
