import type { LoggerService } from '@nestjs/common';
import { type DestinationStream, pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { TERMINAL_OPTIONS } from './terminal-line.js';
import { TurnBufferedDestination } from './turn-buffered-destination.js';

/**
 * Paths pino blanks out wherever they appear. Request logs carry the path only (no query, no
 * headers), so these guard against a secret reaching a log through an object passed by code.
 */
const REDACTED = [
  'authorization',
  'password',
  'client_secret',
  'clientSecret',
  'secret',
  'code_verifier',
  'token',
  'access_token',
  'refresh_token',
  'privateKey',
  'private_key_pem',
].flatMap((key) => [key, `*.${key}`, `*.*.${key}`]);

/**
 * JSON lines to stdout by default (written once per round of the event loop), the CLI to stderr
 * (fd 2), tests to a stream they read.
 * `pretty`: one readable line per log line for a person at a terminal (terminal-line.ts) instead of JSON.
 */
export function createRootLogger(options: { level: string; destination?: 1 | 2 | DestinationStream; pretty?: boolean }): Logger {
  const fd = typeof options.destination === 'number' ? options.destination : 1;
  const destination =
    typeof options.destination === 'object'
      ? options.destination
      : options.pretty
        ? pretty({ ...TERMINAL_OPTIONS, destination: fd, colorize: true })
        : new TurnBufferedDestination(fd);
  return pino(
    {
      level: options.level,
      base: { service: 'voyage-connect' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED, censor: '[redacted]' },
      serializers: {
        err: pino.stdSerializers.err,
        // Fastify's request logs: the path only, since queries carry states and codes.
        req: (request: { method: string; url: string; ip?: string }) => ({
          method: request.method,
          path: request.url.split('?')[0],
          remoteAddress: request.ip,
        }),
        res: (reply: { statusCode: number }) => ({ statusCode: reply.statusCode }),
      },
    },
    destination,
  );
}

/** Contexts of Nest's own start-up chatter (modules loaded, routes mapped): debug, not info. */
const FRAMEWORK_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication', 'WebSocketsController']);

/**
 * Nest's logger interface on top of pino: context becomes a field. Code that logs for a request
 * writes to `request.log`, which carries the request id.
 */
export class PinoLoggerService implements LoggerService {
  constructor(private readonly root: Logger) {}

  log(message: unknown, ...params: unknown[]) {
    const context = params.at(-1);
    this.write(typeof context === 'string' && FRAMEWORK_CONTEXTS.has(context) ? 'debug' : 'info', message, params);
  }

  error(message: unknown, ...params: unknown[]) {
    // Nest calls error(message, stack, context); a stack is a string with newlines.
    const stack = typeof params[0] === 'string' && params[0].includes('\n') ? (params.shift() as string) : undefined;
    this.write('error', message, params, stack);
  }

  warn(message: unknown, ...params: unknown[]) {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]) {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]) {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]) {
    this.write('fatal', message, params);
  }

  private write(level: 'info' | 'error' | 'warn' | 'debug' | 'trace' | 'fatal', message: unknown, params: unknown[], stack?: string) {
    if (!this.root.isLevelEnabled(level)) return;
    const context = typeof params.at(-1) === 'string' ? (params.pop() as string) : undefined;
    const fields: Record<string, unknown> = { context };
    if (stack) fields.stack = stack;
    if (message instanceof Error) this.root[level]({ ...fields, err: message }, message.message);
    else if (typeof message === 'object' && message !== null) this.root[level]({ ...fields, ...message });
    else this.root[level](fields, String(message));
  }
}
