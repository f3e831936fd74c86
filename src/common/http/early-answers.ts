import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** Whether the request announces a body: RFC 9112 §6.3, a Transfer-Encoding or a non-zero Content-Length. */
const announcesBody = (headers: IncomingHttpHeaders) => headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;

/**
 * An answer sent while its request's body is still arriving — a 413 for the announced length, a
 * 415, the request deadline's 503, any refusal that does not read the body — closes the
 * connection: `Connection: close` tells the client, and Node ends and destroys the socket once the
 * answer is written. Kept alive, the connection would go on taking a trickling client's body, only
 * to drop it, until HTTP_RECEIVE_TIMEOUT_MS. A request whose body was received keeps its
 * connection.
 */
export function closeAfterEarlyAnswers(fastify: FastifyInstance): void {
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (!request.raw.complete && announcesBody(request.headers)) reply.header('connection', 'close');
    done(null, payload);
  });
}
