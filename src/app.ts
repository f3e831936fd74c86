import { randomUUID } from 'node:crypto';
import { type IncomingHttpHeaders, maxHeaderSize } from 'node:http';
import fastifyCookie from '@fastify/cookie';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { Logger } from 'pino';
import { AppModule } from './app.module.js';
import { answerClientError, answerFrameworkError } from './common/http/client-errors.js';
import { closeAfterEarlyAnswers } from './common/http/early-answers.js';
import { httpServerFactory } from './common/http/http-server-factory.js';
import { trackRouteMethods } from './common/http/allowed-methods.js';
import { answerLateRequests } from './common/http/request-deadlines.js';
import { depthLimitedJsonParser } from './common/http/json-body-parser.js';
import { decorateOverHttps } from './common/http/over-https.js';
import { answerUpgradesOverHttp } from './common/http/upgrade-fallback.js';
import { PinoLoggerService } from './common/logging/logger.js';
import { RequestLogController } from './common/logging/request-log.js';
import { requestLogger } from './common/logging/request-logger.js';
import { readTlsFiles } from './config/tls-files.js';
import type { Env } from './config/env.js';
import { VERSION } from './health/version.js';
import { MetricsService } from './metrics/metrics.service.js';
import { DeliveryService } from './notification/delivery/delivery.service.js';
import { BATCH_PUBLISH_PATH } from './notification/publish/notification.controller.js';
import { NotificationWsAdapter } from './notification/streams/notification-ws.adapter.js';
import { StreamAuthorizerService } from './notification/streams/stream-authorizer.service.js';
import { issuerPathDiscovery } from './oidc/issuer-path-discovery.js';
import { CLIENT_SECRET_BASIC } from './oauth/oauth-form-route.decorator.js';

const BODY_LIMIT = 64 * 1024;
// A parameter is never longer than the request line, which Node's header size limit bounds; a
// lower router limit would answer a long client_id 414 where the contract wants an unknown client's 404.
const ROUTER_OPTIONS = { maxParamLength: maxHeaderSize };

/** The whole service as one Nest application on Fastify, not yet listening. */
export async function createApp(env: Env, databaseUrl: string, logger: Logger): Promise<NestFastifyApplication> {
  const tls = readTlsFiles(env);
  const adapter = new FastifyAdapter({
    loggerInstance: logger,
    childLoggerFactory: requestLogger,
    logController: new RequestLogController(logger, env.LOG_REQUESTS),
    requestIdHeader: false,
    genReqId: (request: { headers: IncomingHttpHeaders }) => acceptedRequestId(request.headers['x-request-id']) ?? randomUUID(),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
    serverFactory: httpServerFactory({ headersMs: env.HTTP_HEADERS_TIMEOUT_MS, requestMs: env.HTTP_RECEIVE_TIMEOUT_MS }, tls),
    routerOptions: ROUTER_OPTIONS,
    rewriteUrl: issuerPathDiscovery(env),
    ...(tls ? { https: tls } : {}),
  });
  decorateOverHttps(adapter.getInstance(), env.identityUrl);
  adapter.getInstance().addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  answerUpgradesOverHttp(adapter.getInstance());
  trackRouteMethods(adapter.getInstance(), ROUTER_OPTIONS);
  adapter.getInstance().addHook('onRoute', (route) => {
    if (route.url === BATCH_PUBLISH_PATH) route.bodyLimit = env.PUBLISH_BATCH_MAX_BYTES;
  });
  answerLateRequests(adapter.getInstance(), env.REQUEST_TIMEOUT_MS);
  closeAfterEarlyAnswers(adapter.getInstance());

  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(env, databaseUrl, logger), adapter, {
    logger: new PinoLoggerService(logger),
  });
  app.useBodyParser('application/json', { bodyLimit: BODY_LIMIT }, depthLimitedJsonParser(adapter.getInstance()));
  await app.register(fastifyCookie);
  recordHttpLatency(adapter, app.get(MetricsService));
  app.useWebSocketAdapter(
    new NotificationWsAdapter(app, {
      authorize: (request) => app.get(StreamAuthorizerService).authorize(request),
      maxIncomingBytes: env.WS_MAX_INCOMING_BYTES,
      compression: env.WS_COMPRESSION,
      closeTimeoutMs: env.WS_CLOSE_TIMEOUT_MS,
      afterClose: () => app.get(DeliveryService).flush(),
    }),
  );
  const openApi = new DocumentBuilder()
    .setTitle('voyage-connect')
    .setDescription(OPENAPI_DESCRIPTION)
    .setVersion(VERSION)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'an access token: from POST /public/api/oauth2/token (client credentials) for the notification routes; a user\'s from POST /sso/token, with scope openid, for /sso/userinfo' })
    .addBasicAuth(
      {
        type: 'http',
        scheme: 'basic',
        description:
          'client_secret_basic: client_id and client_secret, each form-urlencoded, as the user name and password. The alternative, client_secret_post, sends both as form fields instead (the empty security requirement); never both at once.',
      },
      CLIENT_SECRET_BASIC,
    )
    .build();
  SwaggerModule.setup('docs', app, () => SwaggerModule.createDocument(app, openApi));
  return app;
}

/** The service in brief, its error formats, and the WebSocket stream, which OpenAPI cannot describe as a route. */
const OPENAPI_DESCRIPTION = `Device sign-in (the OAuth 2.0 helper, the standard device flow of RFC 8628, and the SSO token service) and report notifications.

**Errors.** The OAuth routes (\`/sso/token\`, \`/sso/device_authorization\`, \`/sso/introspect\`, \`/sso/revoke\`, \`/sso/userinfo\`, \`/public/api/oauth2/token\`, \`/external/oauth2helper/…\`) answer RFC 6749 §5.2 bodies \`{error, error_description}\` with \`Cache-Control: no-store\`; the pages (\`/\`, \`/sso/authorize\`, \`/sso/device\`, \`/sso/logout\`, \`/sso/callback/…\`) answer HTML, their failures included (a 500 or 503 is an error page naming the request's id); every other route answers \`{message, correlationId}\` (plus \`errors\` for field validation). Any route may answer 500 in its format (\`server_error\` on the OAuth routes) without details; 503 carries \`Retry-After\`. Requests that never reach a route get \`{message, correlationId}\`: 400 (not HTTP, or a URL that cannot be decoded), 404 (no such route; a browser's page request gets an HTML "Page not found" page), 405 with \`Allow\` (a method the path has no route for; \`invalid_request\` on the OAuth routes), 408 (too slow), 431 (headers over 16 KiB).

**Notification stream** (WebSocket, not an HTTP route): \`GET /voyage/notification/v1/ws/products\` with \`Upgrade: websocket\` and \`Authorization: Bearer <token with scope notification:subscribe>\` (no subprotocol: the original stream, v1, described here; the subprotocol \`voyage.v2\` gives protocol v2, and GET /voyage/notification/v1/sse/products the same stream as server-sent events, both in the notification stream manual). Refused before the upgrade with 401 (no, malformed, forged, expired or revoked token, disabled client), 403 (no subscribe scope, or a browser \`Origin\` not in WS_ALLOWED_ORIGINS), both with \`WWW-Authenticate\`, or 503 with \`Retry-After\` (the database is away). Then one JSON notification per text message (the published fields without \`recipient\`), oldest first, including those published while the client was away. After each burst the server sends a ping carrying the last message's sequence number; the client's pong (every WebSocket library sends it) confirms it read them. Close codes: 1001 the instance is shutting down (reconnect), 1008 too many connections or the token, grant, signing key or client was revoked (reconnect later, with a new token), 4003 the token expired (get a new token, reconnect), 1009 a client frame over WS_MAX_INCOMING_BYTES, 1013 the client stopped reading, or its delivery could not be started within REQUEST_TIMEOUT_MS (reconnect: it resumes where it was). The server pings every WS_HEARTBEAT_INTERVAL seconds, or at its client's own interval (client:update --heartbeat); a client that missed the previous pong is dropped. A client that offers permessage-deflate gets it, without context takeover (WS_COMPRESSION).

This document is served at \`/docs\` (and as JSON at \`/docs-json\`).`;

/** Latency per route pattern (not per URL, which would explode the label set). */
function recordHttpLatency(adapter: FastifyAdapter, metrics: MetricsService) {
  adapter.getInstance().addHook('onResponse', (request, reply, done) => {
    metrics.observeHttp(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

/** An incoming X-Request-Id is kept for correlation only when it is short and plain. */
function acceptedRequestId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && /^[\w.:-]{1,64}$/.test(header) ? header : undefined;
}

/**
 * TRUST_PROXY: "true"/"false", a hop count, or a comma-separated list of addresses/CIDRs.
 * A hop count becomes a function, which is how Fastify's types accept it.
 */
export function parseTrustProxy(value: string): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (value === 'true' || value === 'false') return value === 'true';
  if (/^\d+$/.test(value)) return (_address, hop) => hop < Number(value);
  return value.split(',').map((entry) => entry.trim()).filter(Boolean);
}
