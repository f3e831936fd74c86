/**
 * A TCP relay that gives the bytes crossing it a satellite hop's timing, for kernels without
 * `sch_netem` (bench/lib/satellite-link.ts puts it on the ship's side of the link). Each
 * direction delays every chunk by `delayMs`; a chunk with a lost segment (each of its ~1448-byte
 * segments lost with `lossPercent` %) waits `lossStallMs` more, and so does everything behind it,
 * as TCP's in-order delivery holds the stream until the retransmission arrives. The relay's own
 * connection to the upstream opens 1.5 round trips after the ship's, when TCP's handshake over
 * the hop would have completed (the ship's `connect` returns at once: the handshake's time shows
 * in its first exchange). A FIN or a reset crosses behind the data, one delay later.
 *
 * What it does not do, and netem would: the ship's TCP talks to the relay across no delay, so its
 * congestion window, ACK clock and retransmissions run at the veth's speed, not at 1.2 s per
 * round trip; a loss costs a fixed stall instead of a retransmission that cuts the sending rate;
 * the delay is applied per read rather than per packet. Latencies of small messages (handshakes,
 * notifications, acks, resumes) come out as on the real hop; bulk throughput over a long, lossy
 * round trip would come out higher than the real one.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface LatencyRelayOptions {
  /** Where the ship connects (an address of the link). */
  listenHost: string;
  upstreamHost: string;
  upstreamPort: number;
  /** One-way delay, each direction. */
  delayMs: number;
  /** Chance, in %, that one segment is lost, each direction. */
  lossPercent: number;
  /** What a loss costs: one retransmission timeout. */
  lossStallMs: number;
  /** Seed of the loss draws: the same seed, the same losses for the same traffic. */
  seed: number;
}

export interface LatencyRelay {
  port: number;
  /** How many chunks a loss stalled so far. */
  losses(): number;
  /** Ends every relayed connection: at once toward the upstream, with a reset toward the ship. */
  dropAll(): void;
  close(): Promise<void>;
}

/** The TCP payload of one full segment on a 1500-byte link (IPv4 and TCP headers with timestamps). */
const SEGMENT_BYTES = 1448;
/** A direction reading faster than it may deliver stops reading past this much in flight. */
const HIGH_WATER_BYTES = 1 << 20;

export async function startLatencyRelay(options: LatencyRelayOptions): Promise<LatencyRelay> {
  const random = mulberry32(options.seed);
  const segmentLoss = options.lossPercent / 100;
  /** The extra wait of a chunk of `bytes`: a stall when any of its segments is lost. */
  let losses = 0;
  const stallFor = (bytes: number) => {
    const hit = 1 - (1 - segmentLoss) ** Math.ceil(bytes / SEGMENT_BYTES);
    if (segmentLoss === 0 || random() >= hit) return 0;
    losses++;
    return options.lossStallMs;
  };
  const connections = new Set<() => void>();

  const server: Server = createServer({ allowHalfOpen: true, noDelay: true }, (ship) => {
    const upstream = new PendingSocket();
    const uplink = new DelayedPipe(ship, upstream, options.delayMs, stallFor);
    const downlink = new DelayedPipe(null, ship, options.delayMs, stallFor);
    const drop = () => {
      connections.delete(drop);
      uplink.discard();
      downlink.discard();
      if (!ship.destroyed) ship.resetAndDestroy();
      upstream.cancel();
      upstream.socket?.destroy();
    };
    const forgetOnceClosed = () => {
      if (ship.destroyed && upstream.socket?.destroyed) connections.delete(drop);
    };
    connections.add(drop);
    // A reset on one side reaches the other one hop later, behind what was already on its way.
    ship.on('error', () => uplink.reset());
    ship.on('close', forgetOnceClosed);
    // SYN, SYN-ACK, ACK: the upstream accepts the connection 1.5 round trips after the ship began it.
    upstream.open(3 * options.delayMs, () => {
      const socket = connect({ host: options.upstreamHost, port: options.upstreamPort, allowHalfOpen: true, noDelay: true });
      socket.on('error', () => downlink.reset());
      socket.on('close', forgetOnceClosed);
      downlink.attachSource(socket);
      return socket;
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.listenHost, resolve);
  });
  return {
    port: (server.address() as { port: number }).port,
    losses: () => losses,
    dropAll: () => [...connections].forEach((drop) => drop()),
    close: () => {
      [...connections].forEach((drop) => drop());
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The relay's connection to the upstream, made after the handshake's delay; writes wait for it. */
class PendingSocket {
  socket?: Socket;
  private timer?: NodeJS.Timeout;
  private waiting: (() => void)[] = [];

  open(afterMs: number, make: () => Socket): void {
    this.timer = setTimeout(() => {
      this.socket = make();
      this.socket.once('connect', () => this.waiting.splice(0).forEach((ready) => ready()));
    }, afterMs);
  }

  /** Calls `ready` once the connection is open (at once if it is). */
  whenOpen(ready: () => void): void {
    if (this.socket && !this.socket.connecting) ready();
    else this.waiting.push(ready);
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.waiting = [];
  }
}

type Chunk = { due: number; data: Buffer } | { due: number; end: true } | { due: number; reset: true };

/**
 * One direction: chunks leave in the order they came, each no earlier than its own due time
 * (arrival + delay + any stall) and no earlier than the chunk before it.
 */
class DelayedPipe {
  private queue: Chunk[] = [];
  private queuedBytes = 0;
  private lastDue = 0;
  private timer?: NodeJS.Timeout;
  private source: Socket | null = null;
  private awaitingDrain = false;

  constructor(
    source: Socket | null,
    private readonly target: Socket | PendingSocket,
    private readonly delayMs: number,
    private readonly stallFor: (bytes: number) => number,
  ) {
    if (source) this.attachSource(source);
  }

  attachSource(source: Socket): void {
    this.source = source;
    source.on('data', (data: Buffer) => this.push({ due: this.dueAfter(this.stallFor(data.length)), data }));
    source.on('end', () => this.end());
  }

  /** The FIN, in order behind the data. */
  end(): void {
    this.push({ due: this.dueAfter(0), end: true });
  }

  /** A reset, in order behind the data. */
  reset(): void {
    this.push({ due: this.dueAfter(0), reset: true });
  }

  discard(): void {
    clearTimeout(this.timer);
    this.queue = [];
    this.queuedBytes = 0;
  }

  private dueAfter(stallMs: number): number {
    this.lastDue = Math.max(Date.now() + this.delayMs + stallMs, this.lastDue);
    return this.lastDue;
  }

  private push(chunk: Chunk): void {
    this.queue.push(chunk);
    if ('data' in chunk) this.queuedBytes += chunk.data.length;
    if (this.inFlight() > HIGH_WATER_BYTES) this.source?.pause();
    if (this.queue.length === 1) this.schedule();
  }

  private schedule(): void {
    clearTimeout(this.timer);
    const head = this.queue[0];
    if (head) this.timer = setTimeout(() => this.release(), Math.max(0, head.due - Date.now()));
  }

  /** Sends every chunk that is due, once the target is open. */
  private release(): void {
    const target = this.target instanceof PendingSocket ? this.target.socket : this.target;
    if (!target || target.connecting) {
      (this.target as PendingSocket).whenOpen(() => this.release());
      return;
    }
    while (this.queue.length > 0 && this.queue[0].due <= Date.now()) {
      const chunk = this.queue.shift()!;
      if ('data' in chunk) this.queuedBytes -= chunk.data.length;
      if (target.destroyed) continue;
      if ('data' in chunk) target.write(chunk.data);
      else if ('end' in chunk) target.end();
      else target.resetAndDestroy();
    }
    this.resumeWhenDrained(target);
    this.schedule();
  }

  /** Reads again once what is in flight fell to half the high-water mark. */
  private resumeWhenDrained(target: Socket): void {
    if (!this.source?.isPaused() || this.awaitingDrain) return;
    if (this.inFlight() <= HIGH_WATER_BYTES / 2) this.source.resume();
    else if (target.writableLength > 0) {
      this.awaitingDrain = true;
      target.once('drain', () => {
        this.awaitingDrain = false;
        this.resumeWhenDrained(target);
      });
    } // else: the queue holds it, and the next release looks again
  }

  private inFlight(): number {
    const target = this.target instanceof PendingSocket ? this.target.socket : this.target;
    return this.queuedBytes + (target?.writableLength ?? 0);
  }
}

/** A small seeded PRNG (mulberry32): reproducible loss draws without a dependency. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
