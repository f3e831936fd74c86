import type { FastifyRequest } from 'fastify';

/**
 * A refused or failed request, on the request's own logger so the line carries its id: a server
 * error with its details at error level, a client error briefly at debug level.
 */
export function logFailure(request: FastifyRequest, context: string, status: number, exception: unknown, summary: string): void {
  if (status >= 500) request.log.error({ context, err: exception instanceof Error ? exception : new Error(String(exception)) }, summary);
  else request.log.debug({ context }, summary);
}
