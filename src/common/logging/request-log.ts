import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { type Logger, pino } from 'pino';

const { chindingsSym, formattersSym, streamSym, timeSym } = pino.symbols;

/**
 * Fastify's request lines, one per request instead of two: written when the request is answered,
 * with its id, method, path (never the query, which carries states and codes), address, status
 * and time. These are the lines a busy instance writes most, so each is put together here, on the
 * root logger's own stream with its level, time and bindings, rather than through pino's object
 * serialisation and redaction: those cost a tenth of a code poll (the fields are chosen here and
 * none can hold a secret). Every other line Fastify writes for a request goes through the logger.
 */
export class RequestLogController extends LogController {
  private readonly root: Logger;
  /** `{"level":"info"` as the root logger's level formatter writes it. */
  private readonly opening: string;
  /** The root logger's time field, made once per millisecond (a busy instance answers many in one). */
  private timeField = '';
  private timeFieldMs = 0;

  constructor(root: Logger, enabled: boolean) {
    super({ disableRequestLogging: !enabled });
    this.root = root;
    const formatters = (root as unknown as Record<symbol, { level: (label: string, value: number) => object }>)[formattersSym];
    this.opening = JSON.stringify(formatters.level('info', pino.levels.values.info)).slice(0, -1);
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) return super.requestCompleted(error, request, reply);
    if (this.isLogDisabled(request) || !this.root.isLevelEnabled('info')) return;
    const query = request.url.indexOf('?');
    const path = query === -1 ? request.url : request.url.slice(0, query);
    const root = this.root as unknown as Record<symbol, unknown>;
    const now = Date.now();
    if (now !== this.timeFieldMs) {
      this.timeField = (root[timeSym] as () => string)();
      this.timeFieldMs = now;
    }
    const line =
      `${this.opening}${this.timeField}${root[chindingsSym] as string}` +
      `,"reqId":${JSON.stringify(request.id)},"req":{"method":${JSON.stringify(request.method)},"path":${JSON.stringify(path)},"remoteAddress":${JSON.stringify(request.ip ?? null)}}` +
      `,"res":{"statusCode":${reply.statusCode}},"responseTime":${reply.elapsedTime},"msg":"request completed"}\n`;
    (root[streamSym] as { write(line: string): void }).write(line);
  }
}
