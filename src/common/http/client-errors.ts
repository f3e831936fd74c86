import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Errors Node raises before there is a request to route, by code; anything else it could not parse is a 400. */
const BEFORE_ROUTING: Record<string, [status: number, message: string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request was not received in time'],
  HPE_HEADER_OVERFLOW: [431, 'The request headers are too large'],
};

/**
 * Fastify's clientErrorHandler: a client too slow, with headers too large, or speaking no HTTP
 * gets the service's error format (`{message, correlationId}`) rather than Fastify's, then the
 * connection closes (it is in no state to carry another request).
 */
export function answerClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] = BEFORE_ROUTING[error.code ?? ''] ?? [400, 'The request could not be read'];
  const correlationId = randomUUID();
  this.log.debug({ err: error, correlationId }, 'client error');
  const body = JSON.stringify({ message, correlationId });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** Fastify's frameworkErrors: a URL the router cannot decode (`%zz` in a path segment) is a 400 in the same format. */
export function answerFrameworkError(_error: Error, request: FastifyRequest, reply: FastifyReply): void {
  void reply.code(400).send({ message: 'The request URL could not be read', correlationId: request.id });
}
