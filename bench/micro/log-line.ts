/**
 * What one request log line costs, written the way the service wrote it before (a child logger
 * per request, two lines through the root logger's redaction), as one line through pino, and the
 * way it writes it now (RequestLogController). Single process, pinned by the caller if wanted:
 *
 *   taskset -c 0 npx tsx bench/micro/log-line.ts
 */
import { pino } from 'pino';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createRootLogger } from '../../src/common/logging/logger.js';
import { RequestLogController } from '../../src/common/logging/request-log.js';

const root = createRootLogger({ level: 'info', destination: pino.destination({ dest: '/dev/null', sync: false }) });
const lines = root.child({}, { redact: { paths: [] }, serializers: { req: (value: unknown) => value, res: (value: unknown) => value } });
const request = { method: 'POST', url: '/public/api/oauth2/token', ip: '127.0.0.1' };
const N = 200_000;

function measure(name: string, write: (i: number) => void) {
  for (let i = 0; i < 20_000; i++) write(i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) write(i);
  console.log(`${name}: ${(Number(process.hrtime.bigint() - start) / N / 1000).toFixed(2)} µs per request`);
}

measure('before: child logger, two lines, redacted', (i) => {
  const child = root.child({ reqId: `req-${i}` });
  child.info({ req: request }, 'incoming request');
  child.info({ res: { statusCode: 200 }, responseTime: 1.2 }, 'request completed');
});
measure('one line through pino, no redaction', (i) => {
  lines.info({ reqId: `req-${i}`, req: { method: 'POST', path: '/public/api/oauth2/token', remoteAddress: '127.0.0.1' }, res: { statusCode: 200 }, responseTime: 1.2 }, 'request completed');
});
const controller = new RequestLogController(root, true);
const reply = { statusCode: 200, elapsedTime: 1.2 } as FastifyReply;
measure('now: RequestLogController', (i) => controller.requestCompleted(null, { ...request, id: `req-${i}` } as unknown as FastifyRequest, reply));
