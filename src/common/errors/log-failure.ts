import type { FastifyRequest } from 'fastify';

/**
 * A refused or failed request, on the request's own logger so the line carries its id: a server
 * error with its details at error level, a client error briefly at debug level. A 503 (the
 * database is away or busy) is expected during an outage, where every request gets one: one short
 * warning line each, without a stack.
 */
export function logFailure(request: FastifyRequest, context: string, status: number, exception: unknown, summary: string): void {
  if (status === 503) request.log.warn({ context, cause: (exception as Error)?.message }, summary);
  else if (status >= 500) request.log.error({ context, err: exception instanceof Error ? exception : new Error(String(exception)) }, summary);
  else request.log.debug({ context }, summary);
}
