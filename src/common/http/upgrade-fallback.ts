import { type IncomingMessage, type Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { BadRequestException, type HttpException, NotFoundException } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';

const REFUSAL = Symbol('voyage.upgradeRefusal');

type Refusable = IncomingMessage & { [REFUSAL]?: HttpException };

/** Whether the request asks for a WebSocket (RFC 6455 §4.1), possibly among other protocols. */
export const asksForWebSocket = (request: IncomingMessage) =>
  (request.headers.upgrade ?? '').split(',').some((protocol) => protocol.trim().toLowerCase() === 'websocket');

/**
 * Answers, over HTTP/1.1, a request Node took out of HTTP: one with an Upgrade header (h2c, or a
 * WebSocket where there is none), or a CONNECT. Node hands those to 'upgrade' and 'connect'
 * listeners, and one that no listener answers gets no answer at all. Here the upgrade is ignored
 * (RFC 9110 §7.8 lets a server do so) and the request goes to the routes like any other, with a
 * fresh response on the same socket, which is closed afterwards. Node stopped parsing at the
 * headers, so a body cannot be read: such a request, and a WebSocket request, are refused by the
 * hook of answerUpgradesOverHttp, through the normal error path, in the route's own format.
 */
export function answerOverHttp(server: Server, request: IncomingMessage, socket: Duplex): void {
  const refusable = request as Refusable;
  if (asksForWebSocket(request)) {
    refusable[REFUSAL] = new NotFoundException(`No WebSocket endpoint at ${request.url?.split('?')[0]}`);
  } else if (request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0) {
    refusable[REFUSAL] = new BadRequestException('A request with a body cannot ask for a protocol upgrade: send it without the Upgrade header');
  }
  // Node no longer watches this socket: an error without a listener would end the process.
  socket.on('error', () => socket.destroy());
  // Whatever follows the headers (a body, pipelined requests) is read and dropped, so closing the
  // socket sends the client a FIN, not an RST that could discard the answer before it reads it.
  socket.resume();
  const response = new ServerResponse(request);
  response.shouldKeepAlive = false; // "Connection: close"
  response.assignSocket(socket as Socket);
  // Once the answer is written; the socket's closing then closes the response too (its 'close' event).
  response.once('finish', () => (socket as Socket).destroySoon());
  server.emit('request', request, response);
}

/**
 * What answerOverHttp needs from the application: the hook that refuses what it marked (before any
 * body is read), and CONNECT requests sent to it. Upgrades come from the WebSocket adapter, which
 * owns the 'upgrade' listener.
 */
export function answerUpgradesOverHttp(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, _reply, done) => done((request.raw as Refusable)[REFUSAL]));
  fastify.server.on('connect', (request: IncomingMessage, socket: Duplex) => answerOverHttp(fastify.server, request, socket));
}
