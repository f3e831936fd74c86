import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { createRootLogger, PinoLoggerService } from '../../../src/common/logging/logger.js';
import { RequestLogController } from '../../../src/common/logging/request-log.js';
import { SecurityEvents } from '../../../src/common/logging/security-events.js';
import { requestLogger } from '../../../src/common/logging/request-logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { lines, logger: createRootLogger({ level: 'debug', destination }) };
}

describe('logging', () => {
  it('redacts secrets in logged objects, at any of the first three levels', () => {
    const { lines, logger } = capture();
    logger.info({ client_secret: 'a', body: { password: 'b', nested: { refresh_token: 'c' } }, authorization: 'd' }, 'x');
    expect(lines[0]).toMatchObject({
      client_secret: '[redacted]',
      body: { password: '[redacted]', nested: { refresh_token: '[redacted]' } },
      authorization: '[redacted]',
    });
  });

  it('gives Nest log lines their context, and an error line its stack', () => {
    const { lines, logger } = capture();
    const nest = new PinoLoggerService(logger);
    nest.warn('careful', 'KeysService');
    nest.error('broke', 'Error: broke\n    at somewhere', 'HttpExceptionFilter');
    expect(lines[0]).toMatchObject({ level: 'warn', msg: 'careful', context: 'KeysService' });
    expect(lines[1]).toMatchObject({ level: 'error', msg: 'broke', context: 'HttpExceptionFilter', stack: expect.stringContaining('at somewhere') });
  });

  it("writes a request's lines with its id and bindings, at the parent's level, and redacted", () => {
    const { lines, logger } = capture();
    logger.level = 'info';
    const log = requestLogger(logger, { reqId: 'req-1' }, {});
    log.debug('not written');
    log.info({ client_secret: 's' }, 'written');
    log.child({ part: 'inner' }).warn('nested');
    expect(lines).toEqual([
      expect.objectContaining({ level: 'info', msg: 'written', reqId: 'req-1', client_secret: '[redacted]' }),
      expect.objectContaining({ level: 'warn', msg: 'nested', reqId: 'req-1', part: 'inner' }),
    ]);
    expect(log.level).toBe('info');
  });

  it("honours a route's own log level", () => {
    const { lines, logger } = capture();
    logger.level = 'warn';
    requestLogger(logger, { reqId: 'req-2' }, { level: 'debug' }).debug('route debug');
    expect(lines).toEqual([expect.objectContaining({ level: 'debug', msg: 'route debug', reqId: 'req-2' })]);
  });

  it('writes one line per request once it is answered: id, method, path without the query, address, status, time', async () => {
    const { lines, logger } = capture();
    logger.level = 'info';
    const app = Fastify({ loggerInstance: logger, logController: new RequestLogController(logger, true) });
    app.get('/route', async () => 'ok');
    await app.inject({ url: '/route?state=st4te-secret', headers: { authorization: 'Bearer t0ken-secret' } });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual([
      {
        level: 'info',
        time: expect.any(String),
        service: 'voyage-connect',
        reqId: expect.any(String),
        req: { method: 'GET', path: '/route', remoteAddress: '127.0.0.1' },
        res: { statusCode: 200 },
        responseTime: expect.any(Number),
        msg: 'request completed',
      },
    ]);
    expect(JSON.stringify(lines)).not.toMatch(/secret/);
    await app.close();
  });

  it.each([
    ['request logging is off', 'info', false],
    ['the level is above info', 'warn', true],
  ])('writes no request lines when %s', async (_case, level, enabled) => {
    const { lines, logger } = capture();
    logger.level = level as string;
    const app = Fastify({ loggerInstance: logger, logController: new RequestLogController(logger, enabled as boolean) });
    app.get('/route', async () => 'ok');
    await app.inject('/route');
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual([]);
    await app.close();
  });
});

describe('security events', () => {
  it('writes one line with the event, its reason and fields, and the requester', () => {
    const { lines, logger } = capture();
    new SecurityEvents(logger).emit('login.failed', { reason: 'wrong_password', clientId: 'tv', username: 'alice' }, { address: '192.0.2.1', requestId: 'req-9' });
    expect(lines).toEqual([
      expect.objectContaining({ level: 'info', event: 'login.failed', reason: 'wrong_password', clientId: 'tv', username: 'alice', address: '192.0.2.1', reqId: 'req-9', msg: 'sign-in refused' }),
    ]);
  });

  it('never throws at its caller, even when the log cannot be written', () => {
    const broken = createRootLogger({
      level: 'info',
      destination: new Writable({
        write() {
          throw new Error('disk full');
        },
      }),
    });
    expect(() => new SecurityEvents(broken).emit('user.enabled', { reason: 'cli', username: 'alice', userId: 'u1' })).not.toThrow();
  });
});
