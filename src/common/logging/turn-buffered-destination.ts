import { type DestinationStream, pino } from 'pino';

/**
 * JSON lines to a file descriptor, gathered while the event loop handles one round of I/O and
 * written together when that round ends (setImmediate), through pino's asynchronous destination.
 * A busy instance answers many requests per round; one write each cost a fifth of a code poll's
 * throughput, most of it in handing every line to a worker thread. A line is never later than the
 * round that logged it, and lines still gathered are written before the process exits.
 */
export class TurnBufferedDestination implements DestinationStream {
  private readonly output: ReturnType<typeof pino.destination>;
  private pending = '';
  private scheduled = false;

  constructor(fd: number) {
    this.output = pino.destination({ fd, sync: false });
    // Before pino's own exit hook would flush the destination: 'exit' listeners run in order, so go first.
    process.prependListener('exit', () => this.flushSync());
  }

  write(line: string): void {
    this.pending += line;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  /** Writes what the current round gathered and waits until it is written (for exits). */
  flushSync(): void {
    this.flush();
    this.output.flushSync();
  }

  private readonly flush = () => {
    this.scheduled = false;
    if (this.pending === '') return;
    const lines = this.pending;
    this.pending = '';
    this.output.write(lines);
  };
}
