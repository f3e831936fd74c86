/**
 * How a log line reads at a terminal (pino-pretty): one line each, the time, the level, then
 * - a request: `GET /health 200 3.1 ms`
 * - a security event: `login.failed (wrong_password): sign-in refused {"clientId":…,"username":…}`
 * - anything else: `[Context] message`, and its other fields as JSON on the same line.
 * Error stacks stay on lines of their own.
 */
export const TERMINAL_OPTIONS = {
  singleLine: true,
  translateTime: 'SYS:HH:MM:ss.l',
  // Shown in the message (or of no use at a terminal), so not again after it.
  ignore: 'pid,hostname,service,reqId,context,req,res,responseTime,event,reason',
  messageFormat: terminalMessage,
};

interface LogLine {
  msg?: string;
  context?: string;
  event?: string;
  reason?: string;
  req?: { method?: string; path?: string };
  res?: { statusCode?: number };
  responseTime?: number;
}

export function terminalMessage(log: Record<string, unknown>, messageKey: string): string {
  const line = log as LogLine;
  const message = String(log[messageKey] ?? '');
  if (line.req && line.res && typeof line.responseTime === 'number') {
    return `${line.req.method} ${line.req.path} ${line.res.statusCode} ${line.responseTime.toFixed(1)} ms`;
  }
  if (line.event) return `${line.event}${line.reason ? ` (${line.reason})` : ''}: ${message}`;
  const status = line.res?.statusCode === undefined ? '' : ` (status ${line.res.statusCode})`;
  return `${line.context ? `[${line.context}] ` : ''}${message}${status}`;
}
