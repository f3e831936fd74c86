import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiResponse, getSchemaPath, type HeadersObject } from '@nestjs/swagger';
import { ErrorResponseDto } from '../errors/error-response.dto.js';

const HTML = { 'text/html': { schema: { type: 'string' as const } } };

/** The headers every page carries (sendHtmlPage). */
export const PAGE_HEADERS: HeadersObject = {
  'Set-Cookie': { description: 'the CSRF cookie (`vc_csrf`, or `__Host-vc_csrf` over https): HttpOnly, SameSite=Strict', schema: { type: 'string' } },
  'Cache-Control': { description: '`no-store`', schema: { type: 'string' } },
  'Content-Security-Policy': { description: "no scripts, forms only to the service (and the device's address), `frame-ancestors 'none'`", schema: { type: 'string' } },
};

/**
 * A page of the service (text/html). With `orJsonError`, the same status may also come as the
 * service's JSON error: a failure outside the page's own logic (the database is away) goes through
 * the global filter.
 */
export const ApiHtmlResponse = (status: number, description: string, options: { headers?: HeadersObject; orJsonError?: boolean } = {}) =>
  applyDecorators(
    ApiExtraModels(ErrorResponseDto),
    ApiResponse({
      status,
      description,
      headers: { ...PAGE_HEADERS, ...options.headers },
      content: options.orJsonError ? { ...HTML, 'application/json': { schema: { $ref: getSchemaPath(ErrorResponseDto) } } } : HTML,
    }),
  );
