import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createRootLogger, logContext, PinoLoggerService } from '../../src/common/logging/logger.js';

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

  it('gives Nest log lines their context and the current request id', () => {
    const { lines, logger } = capture();
    const nest = new PinoLoggerService(logger);
    logContext.run({ reqId: 'req-1' }, () => nest.warn('careful', 'KeysService'));
    nest.error('broke', 'Error: broke\n    at somewhere', 'HttpExceptionFilter');
    expect(lines[0]).toMatchObject({ level: 'warn', msg: 'careful', context: 'KeysService', reqId: 'req-1' });
    expect(lines[1]).toMatchObject({ level: 'error', msg: 'broke', context: 'HttpExceptionFilter', stack: expect.stringContaining('at somewhere') });
  });
});
