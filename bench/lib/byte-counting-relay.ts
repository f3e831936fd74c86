/**
 * A TCP relay that counts what crosses it, both ways: every byte of TCP payload between a client
 * and the service (the HTTP request and response heads, the WebSocket upgrade, frames, pings and
 * pongs, acks, event-stream comments, chunked encoding, gzip's framing). It measures; it never
 * works out a byte count from message sizes. IP and TCP headers (and TCP's bare ACKs) are not
 * payload and are not counted.
 *
 * Every chunk read is kept with its time and direction, so a benchmark can take the bytes of any
 * window after the fact and count the exchanges in it (`exchanges`: runs of chunks with a quiet
 * gap between them, such as one ping and its pong).
 */
import { connect, createServer, type Socket } from 'node:net';

/** `up`: client → service; `down`: service → client. */
export type Direction = 'up' | 'down';

export interface WireChunk {
  at: number;
  direction: Direction;
  bytes: number;
}

export interface WireBytes {
  up: number;
  down: number;
  total: number;
}

export interface ByteCountingRelay {
  /** Where the client connects instead of the service (`http://127.0.0.1:PORT`). */
  base: string;
  /** The bytes that crossed from `from` (default: the start) up to `to` (default: now). */
  bytes(from?: number, to?: number): WireBytes;
  /** When the last chunk crossed (0 before any did). */
  lastAt(): number;
  /** Resolves once nothing crossed for `quietMs` (at most `maxMs` of waiting). */
  quiet(quietMs: number, maxMs?: number): Promise<void>;
  /** Runs of chunks in the window, each started by a chunk more than `gapMs` after the one before it. */
  exchanges(from: number, to: number, gapMs: number): number;
  /** TCP connections the client opened through the relay so far. */
  connections(): number;
  close(): Promise<void>;
}

export async function startByteCountingRelay(upstreamPort: number, upstreamHost = '127.0.0.1'): Promise<ByteCountingRelay> {
  const chunks: WireChunk[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const counted = (direction: Direction) => (data: Buffer) => chunks.push({ at: Date.now(), direction, bytes: data.length });

  const server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    connections++;
    const upstream = connect({ host: upstreamHost, port: upstreamPort, allowHalfOpen: true, noDelay: true });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      // One side failing ends both, as a dropped connection would.
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    // Counted as read, before the other side is written: a listener beside the pipe.
    client.on('data', counted('up'));
    upstream.on('data', counted('down'));
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });

  const within = (from = 0, to = Number.POSITIVE_INFINITY) => chunks.filter((chunk) => chunk.at >= from && chunk.at <= to);
  return {
    base: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    bytes(from, to) {
      const sum = (direction: Direction) => within(from, to).reduce((total, chunk) => total + (chunk.direction === direction ? chunk.bytes : 0), 0);
      const [up, down] = [sum('up'), sum('down')];
      return { up, down, total: up + down };
    },
    lastAt: () => chunks.at(-1)?.at ?? 0,
    async quiet(quietMs, maxMs = 30_000) {
      const deadline = Date.now() + maxMs;
      for (;;) {
        const idle = Date.now() - (chunks.at(-1)?.at ?? 0);
        if (idle >= quietMs || Date.now() > deadline) return;
        await new Promise((resolve) => setTimeout(resolve, quietMs - idle));
      }
    },
    exchanges(from, to, gapMs) {
      let count = 0;
      let previous = Number.NEGATIVE_INFINITY;
      for (const chunk of within(from, to)) {
        if (chunk.at - previous > gapMs) count++;
        previous = chunk.at;
      }
      return count;
    },
    connections: () => connections,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
