import { ApiResponse, type HeadersObject } from '@nestjs/swagger';

const HTML = { 'text/html': { schema: { type: 'string' as const } } };

/** The headers every page carries (sendHtmlPage). */
export const PAGE_HEADERS: HeadersObject = {
  'Set-Cookie': { description: 'the CSRF cookie (`vc_csrf`, or `__Host-vc_csrf` over https): HttpOnly, SameSite=Strict', schema: { type: 'string' } },
  'Cache-Control': { description: '`no-store`', schema: { type: 'string' } },
  'Content-Security-Policy': { description: "no scripts, forms only to the service (and the device's address), `frame-ancestors 'none'`", schema: { type: 'string' } },
};

/** A page of the service (text/html); its failures are pages too (PageExceptionFilter). */
export const ApiHtmlResponse = (status: number, description: string, options: { headers?: HeadersObject } = {}) =>
  ApiResponse({ status, description, headers: { ...PAGE_HEADERS, ...options.headers }, content: HTML });
