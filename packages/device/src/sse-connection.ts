import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Connection, ConnectionContext } from './connection.js';
import { retryAfterMs } from './http.js';
import { watchSilence } from './liveness.js';
import type { Ending } from './reconnect-policy.js';

const PATH = '/voyage/notification/v1/sse/products';
/** The end-of-stream events the service names, as the WebSocket close codes they stand for. */
const ENDINGS: Record<string, { code: number; reason: string }> = {
  shutdown: { code: 1001, reason: 'the instance is stopping' },
  'token-expired': { code: 4003, reason: 'the token expired' },
};

/**
 * Server-sent events over fetch, for networks whose proxies refuse WebSocket. A notification is
 * confirmed by the next connection's `Last-Event-ID` (the position handled last), so what the
 * device had not handled when the stream broke comes again.
 */
export function openEventStream(context: ConnectionContext): Connection {
  const url = new URL(PATH, context.api);
  if (context.position?.epoch !== undefined) url.searchParams.set('epoch', context.position.epoch);
  const abort = new AbortController();
  const silence = watchSilence(context.silenceMs, (silentMs) => abort.abort(new Error(`no event or comment for ${Math.round(silentMs / 1000)} s: the stream is given up`)));
  let endedBy: { code: number; reason: string } | undefined;
  /** Events carry no epoch: the one the device had holds until a reset says it is not the service's. */
  let epoch = context.position?.epoch;

  const ended = (async (): Promise<Ending> => {
    silence.heard();
    try {
      const response = await fetch(url, {
        headers: {
          authorization: `Bearer ${context.token}`,
          accept: 'text/event-stream',
          ...(context.position && { 'last-event-id': String(context.position.seq) }),
        },
        signal: abort.signal,
      });
      if (response.status !== 200 || !response.body) {
        await response.body?.cancel();
        return { kind: 'refused', status: response.status, ...(response.headers.has('retry-after') && { retryAfterMs: retryAfterMs(response.headers, 0) }) };
      }
      context.opened();
      // The heartbeat is `: keepalive`; the stream's opening comment is not a beat.
      const parser = createParser({ onEvent, onComment: (comment) => silence.heard(comment.trim() === 'keepalive') });
      for await (const chunk of response.body.pipeThrough(new TextDecoderStream())) {
        silence.heard();
        parser.feed(chunk);
      }
      return { kind: 'closed', ...(endedBy ?? { code: 1006, reason: 'the stream ended' }), wasOpen: true };
    } catch (error) {
      if (endedBy) return { kind: 'closed', ...endedBy, wasOpen: true };
      const reason = abort.signal.reason instanceof Error ? abort.signal.reason : (error as Error);
      return { kind: 'failed', message: (reason as Error & { cause?: Error }).cause?.message ?? reason.message };
    } finally {
      silence.stop();
    }
  })();

  function onEvent(event: EventSourceMessage) {
    if (event.event === 'notification' && event.id !== undefined && /^\d+$/.test(event.id)) {
      const seq = Number(event.id);
      let notification: Record<string, unknown>;
      try {
        notification = JSON.parse(event.data) as Record<string, unknown>;
      } catch {
        return;
      }
      const position = { seq, ...(epoch !== undefined && { epoch }) };
      return context.arrive({ delivery: { seq, notification }, position });
    }
    if (event.event === 'reset') {
      const reason = (JSON.parse(event.data) as { reason?: string }).reason;
      if (reason === 'epoch') epoch = undefined;
      if (reason === 'retention' || reason === 'epoch') context.arrive({ delivery: { reset: reason } });
      return;
    }
    if (event.event && ENDINGS[event.event]) endedBy = ENDINGS[event.event];
  }

  return {
    ended,
    close: () => {
      endedBy ??= { code: 1000, reason: 'closed by the device' };
      abort.abort();
    },
  };
}
