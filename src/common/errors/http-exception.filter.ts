import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, HttpStatus } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type AppErrorCode } from './app-error.js';
import { isTemporarilyUnavailable, RETRY_AFTER_S } from './temporarily-unavailable.js';
import { logFailure } from './log-failure.js';

const STATUS_BY_CODE: Record<AppErrorCode, number> = {
  not_found: HttpStatus.NOT_FOUND,
  conflict: HttpStatus.CONFLICT,
  invalid_input: HttpStatus.BAD_REQUEST,
};

/**
 * Every HTTP error outside the OAuth endpoints: `{ message, correlationId }` (plus field
 * `errors` for validation). A 500 never shows internals; its details go to the log only.
 */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost) {
    const failure = openFailure(exception, host, 'HttpExceptionFilter');
    if (failure) void failure.reply.status(failure.status).send({ ...failure.body, correlationId: failure.request.id });
  }
}

/**
 * What every exception filter does first: drops a failure that came after the request deadline
 * answered (and logged) it, describes it, logs it on the request's logger, and sets Retry-After
 * on a 503. Undefined when nobody is left to answer.
 */
export function openFailure(exception: unknown, host: ArgumentsHost, context: string) {
  const http = host.switchToHttp();
  const request = http.getRequest<FastifyRequest>();
  const reply = http.getResponse<FastifyReply>();
  if (reply.sent && isTemporarilyUnavailable(exception)) return undefined;
  const { status, body } = describeHttpError(exception);
  // Nest's "Cannot GET <url>" repeats the query, which may carry a state or a code.
  const path = request.url.split('?')[0];
  body.message = body.message.replaceAll(request.url, path);
  logFailure(request, context, status, exception, `${status} ${request.method} ${path}: ${body.message}`);
  if (status === HttpStatus.SERVICE_UNAVAILABLE && !reply.sent) void reply.header('Retry-After', String(RETRY_AFTER_S));
  return { request, reply, status, body };
}

/**
 * The status and the `{ message, errors? }` of a failure, as the service's JSON errors state it
 * (the pages word the same status for a person). A 500 names nothing of what failed.
 */
export function describeHttpError(exception: unknown): { status: number; body: { message: string; errors?: unknown } } {
  if (exception instanceof AppError) {
    // Bad input reads like a failed validation: the reason is a field error.
    if (exception.code === 'invalid_input') return { status: 400, body: { message: 'Validation failed', errors: [exception.message] } };
    return { status: STATUS_BY_CODE[exception.code], body: { message: exception.message } };
  }
  if (exception instanceof HttpException) {
    const response = exception.getResponse();
    const message = typeof response === 'string' ? response : ((response as { message?: unknown }).message ?? exception.message);
    // ValidationPipe reports a list of field messages.
    if (Array.isArray(message)) return { status: exception.getStatus(), body: { message: 'Validation failed', errors: message } };
    return { status: exception.getStatus(), body: { message: String(message) } };
  }
  const fastifyStatus = (exception as { statusCode?: number })?.statusCode;
  if (fastifyStatus && fastifyStatus >= 400 && fastifyStatus < 500) {
    return { status: fastifyStatus, body: { message: (exception as Error).message } };
  }
  if (isTemporarilyUnavailable(exception)) {
    return { status: HttpStatus.SERVICE_UNAVAILABLE, body: { message: 'Service temporarily unavailable: try again shortly' } };
  }
  return { status: HttpStatus.INTERNAL_SERVER_ERROR, body: { message: 'Internal server error' } };
}
