import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilent, LogFn, Logger } from 'pino';

/**
 * Fastify's per-request logger, made on the first line the request actually writes. A pino
 * child costs more than the rest of a small request (its bindings go through redaction), and
 * most requests write nothing at the levels a service runs with.
 */
export function requestLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  // The parent is the pino logger the application was given (`loggerInstance`).
  const pinoParent = parent as Logger;
  // A route with a level of its own needs the real child to know what is enabled.
  return options.level === undefined ? new LazyChildLogger(pinoParent, bindings) : pinoParent.child(bindings, options);
}

class LazyChildLogger implements FastifyBaseLogger {
  private made?: Logger;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  readonly fatal = this.method('fatal');
  readonly error = this.method('error');
  readonly warn = this.method('warn');
  readonly info = this.method('info');
  readonly debug = this.method('debug');
  readonly trace = this.method('trace');
  readonly silent: LogFn = () => {};

  get level(): LevelWithSilent | string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: LevelWithSilent | string) {
    this.real().level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }

  private method(level: Level): LogFn {
    return ((...args: Parameters<LogFn>) => {
      if ((this.made ?? this.parent).isLevelEnabled(level)) this.real()[level](...args);
    }) as LogFn;
  }

  private real(): Logger {
    this.made ??= this.parent.child(this.bindings);
    return this.made;
  }
}
