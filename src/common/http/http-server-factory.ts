import http from 'node:http';
import https from 'node:https';
import type { FastifyServerFactory } from 'fastify';

export interface ReceiveTimeouts {
  /** Time a client has to send the request line and headers. */
  headersMs: number;
  /** Time a client has to send the whole request, headers and body. */
  requestMs: number;
}

/** Node looks for late requests only this often; the cut comes at most this much after the timeout. */
const checkingIntervalMs = (timeouts: ReceiveTimeouts) => Math.min(1000, Math.ceil(timeouts.headersMs / 10));

/**
 * Fastify's server, built here because Node takes the receive timeouts and how often it checks them
 * only when the server is created: a client that sends its headers or its body too slowly (one
 * byte a second keeps a plain socket timeout happy) gets 408 and is disconnected. A connection
 * that was upgraded (the WebSocket stream) is no longer an HTTP request and is not cut.
 */
export function httpServerFactory(timeouts: ReceiveTimeouts, tls?: { cert: Buffer; key: Buffer }): FastifyServerFactory {
  // Node refuses a headers timeout longer than the request timeout; the headers are part of the request.
  const headersTimeout = Math.min(timeouts.headersMs, timeouts.requestMs);
  const options = {
    headersTimeout,
    requestTimeout: timeouts.requestMs,
    connectionsCheckingInterval: checkingIntervalMs({ ...timeouts, headersMs: headersTimeout }),
  };
  return (handler, fastifyOptions) => {
    // A TLS handshake comes before any header: it gets the headers' time.
    const server = tls ? https.createServer({ ...tls, ...options, handshakeTimeout: headersTimeout }, handler) : http.createServer(options, handler);
    // What Fastify sets on the servers it builds itself.
    server.keepAliveTimeout = Number(fastifyOptions.keepAliveTimeout);
    return server as http.Server;
  };
}
