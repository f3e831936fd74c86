import WebSocket from 'ws';
import type { Arrival, Connection, ConnectionContext } from './connection.js';
import { retryAfterMs } from './http.js';
import { watchSilence } from './liveness.js';
import type { Ending } from './reconnect-policy.js';

const PATH = '/voyage/notification/v1/ws/products';
const PROTOCOL_V2 = 'voyage.v2';

interface V2Message {
  type?: string;
  seq?: number;
  epoch?: string;
  data?: Record<string, unknown>;
  reason?: string;
}

/**
 * The WebSocket stream, with the seed's protocol (`v1`: one notification per message) or
 * protocol v2 (sequence numbers, acks, resume, in-band token replacement). `ws`, not Node's own
 * WebSocket: a refused upgrade's status decides what to do next, and the standard API hides it.
 */
export function openWebSocket(context: ConnectionContext, protocol: 'v1' | 'v2'): Connection {
  const url = new URL(PATH, context.api);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  if (protocol === 'v2' && context.position) {
    url.searchParams.set('after', String(context.position.seq));
    if (context.position.epoch !== undefined) url.searchParams.set('epoch', context.position.epoch);
  }
  const socket = new WebSocket(url, protocol === 'v2' ? [PROTOCOL_V2] : [], {
    headers: { authorization: `Bearer ${context.token}` },
    handshakeTimeout: 30_000,
    // Offered to the service; what this side sends is compressed from 128 bytes (ws's default is
    // 1 KiB): the token message of an in-band replacement, not an ack.
    perMessageDeflate: { threshold: 128 },
  });
  let finish!: (ending: Ending) => void;
  const ended = new Promise<Ending>((resolve) => (finish = resolve));
  let wasOpen = false;
  const silence = watchSilence(context.silenceMs, (silentMs) => {
    finish({ kind: 'failed', message: `no message or ping for ${Math.round(silentMs / 1000)} s: the connection is given up` });
    socket.terminate();
  });

  socket.on('open', () => {
    wasOpen = true;
    silence.heard();
    context.opened();
  });
  // The heartbeat's pings are empty; v1's delivery pings carry a seq and come with notifications.
  socket.on('ping', (data) => silence.heard(data.length === 0));
  socket.on('message', (data, isBinary) => {
    silence.heard();
    if (isBinary) return;
    let message: unknown;
    try {
      message = JSON.parse(data.toString());
    } catch {
      return; // not JSON: nothing a device can act on
    }
    if (protocol === 'v1') return context.arrive({ delivery: { notification: message as Record<string, unknown> } });
    onV2Message(message as V2Message);
  });
  socket.on('unexpected-response', (_request, response) => {
    const retryAfter = response.headers['retry-after'];
    const headers = new Headers(typeof retryAfter === 'string' ? { 'retry-after': retryAfter } : {});
    finish({ kind: 'refused', status: response.statusCode ?? 0, ...(retryAfter !== undefined && { retryAfterMs: retryAfterMs(headers, 0) }) });
    socket.terminate();
  });
  socket.on('error', (error) => finish({ kind: 'failed', message: error.message }));
  socket.on('close', (code, reason) => {
    silence.stop();
    finish({ kind: 'closed', code, reason: reason.toString(), wasOpen });
  });

  function onV2Message(message: V2Message) {
    switch (message.type) {
      case 'notification': {
        if (typeof message.seq !== 'number' || !message.data) return;
        const seq = message.seq;
        const arrival: Arrival = {
          delivery: { seq, notification: message.data },
          position: { seq, ...(message.epoch !== undefined && { epoch: message.epoch }) },
          confirm: () => {
            if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'ack', seq }));
          },
        };
        return context.arrive(arrival);
      }
      case 'reset':
        if (message.reason === 'retention' || message.reason === 'epoch') context.arrive({ delivery: { reset: message.reason } });
        return;
      case 'expiring':
        // Replaced in band: a v2 stream that refreshes in time is never closed with 4003.
        context.renewToken().then(
          (token) => socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify({ type: 'token', access_token: token })),
          () => {}, // the 4003 at expiry says it, and the next connection asks again
        );
        return;
      default:
        return; // later versions may add types
    }
  }

  return {
    ended,
    close: () => {
      silence.stop();
      if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
      else socket.close(1000);
    },
  };
}
