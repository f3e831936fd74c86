/**
 * A ship's subscriber, run by bench/ships.ts inside the satellite link's namespace (`ip netns
 * exec`): one stream (bench/lib/ship-clients.ts) kept alive by the same policy whatever its
 * transport, printing one JSON line per thing that happened, with the time (epoch ms) it happened:
 *
 *   {"event":"open","at":…,"attempt":N}
 *   {"event":"notification","at":…,"id":"<correlationId>","seq":N}
 *   {"event":"dead","at":…,"silentMs":…}      the liveness check gave the link up
 *   {"event":"end","at":…,"why":"…"}          the stream ended or an attempt failed
 *
 * The policy: reconnect at once when an open stream ends or is given up; an attempt that fails
 * (refused, or not open within --open-timeout s) is tried again after 1 s; the link is dead when
 * nothing (a notification, a ping, a comment) came for two heartbeats and 2 s more (a loss's
 * retransmission may hold a ping back that long). v2 resumes after the last notification it
 * acked, SSE after the last it received (Last-Event-ID); v1 from its cursor. The token is the one
 * given (the bench's tokens outlive a run).
 *
 *   node --import tsx bench/lib/ship-subscriber.ts --transport v1|v2|sse --base URL --token T
 *       [--compress] [--heartbeat 10] [--open-timeout 10]
 */
import { parseArgs } from 'node:util';
import { openShipStream, type ShipStream, type ShipTransport } from './ship-clients.js';

const { values: opt } = parseArgs({
  options: {
    transport: { type: 'string' },
    base: { type: 'string' },
    token: { type: 'string' },
    compress: { type: 'boolean', default: false },
    heartbeat: { type: 'string', default: '10' },
    'open-timeout': { type: 'string', default: '10' },
  },
});

const deadAfterMs = 2 * Number(opt.heartbeat) * 1000 + 2000;
const now = () => performance.timeOrigin + performance.now();
const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ ...line, at: now() })}\n`);

let attempt = 0;
let stream: ShipStream | undefined;
let resume: { seq: number; epoch?: string } | undefined;
let lastTrafficAt = now();
let reconnecting = false;
/** Whether the current stream has opened: the liveness check watches open streams only (an attempt has its open timeout). */
let live = false;

function connect(): void {
  attempt++;
  reconnecting = false;
  let opened = false;
  const current = openShipStream({
    base: opt.base!,
    token: opt.token!,
    transport: opt.transport as ShipTransport,
    compress: opt.compress!,
    resume,
    openTimeoutMs: Number(opt['open-timeout']) * 1000,
    onTraffic: () => (lastTrafficAt = now()),
    onNotification: ({ seq, data }) => print({ event: 'notification', id: data.correlationId, seq }),
    onEnd: (why) => {
      if (current !== stream) return;
      live = false;
      print({ event: 'end', why });
      remember(current);
      reconnect(opened ? 0 : 1000);
    },
  });
  stream = current;
  current.opened.then(
    () => {
      opened = true;
      live = current === stream;
      lastTrafficAt = now();
      print({ event: 'open', attempt });
    },
    () => {}, // onEnd says it
  );
}

/** Where the stream got to, for the next connection's resume. */
function remember(ended: ShipStream): void {
  const { seq, epoch } = ended.position();
  if (seq !== undefined) resume = { seq, epoch };
}

function reconnect(afterMs: number): void {
  if (reconnecting) return;
  reconnecting = true;
  setTimeout(connect, afterMs);
}

// The liveness check: every 100 ms, whether the link has been silent too long.
setInterval(() => {
  const silentMs = now() - lastTrafficAt;
  if (!live || silentMs <= deadAfterMs || !stream) return;
  print({ event: 'dead', silentMs: Math.round(silentMs) });
  const dead = stream;
  stream = undefined;
  live = false;
  remember(dead);
  dead.close();
  reconnect(0);
}, 100);

for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
connect();
