import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import { MetricsService } from '../metrics/metrics.service.js';
import { DatabaseUrl } from './database-url.js';

const RETRY_MS = [250, 500, 1000, 2000, 5000];
const PROBE_MS = 15_000;
const PROBE_TIMEOUT_MS = 5_000;

type Handler = (payload: string) => void;

/**
 * The listening connection's application_name. The release that began waking instances once per
 * transaction (src/notification/publish/wake-ups.ts) added the -2, so instances can tell whether one of
 * the previous release, which listened as PREVIOUS_RELEASE_LISTENER, is still running.
 */
export const LISTENER_NAME = 'voyage-connect-listener-2';
export const PREVIOUS_RELEASE_LISTENER = 'voyage-connect-listener';

/**
 * One dedicated PostgreSQL connection per process LISTENing on the channels features subscribe
 * to. NOTIFY only wakes: a notification sent while the connection was down is lost, so after
 * every reconnection the `onResume` hooks run and each feature re-reads what it caches.
 */
@Injectable()
export class PgListenerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(PgListenerService.name);
  private readonly handlers = new Map<string, Handler[]>();
  private readonly resumeHooks: (() => void)[] = [];
  private client?: pg.Client;
  private connected = false;
  private stopped = false;
  private attempt = 0;
  private retryTimer?: NodeJS.Timeout;
  private probe?: NodeJS.Timeout;

  constructor(
    private readonly databaseUrl: DatabaseUrl,
    private readonly metrics: MetricsService,
  ) {}

  /** Subscribe before the application starts (in a constructor or onModuleInit). */
  on(channel: string, handler: Handler): void {
    this.handlers.set(channel, [...(this.handlers.get(channel) ?? []), handler]);
  }

  /** Runs after every (re)connection: what was notified meanwhile may have been missed. */
  onResume(hook: () => void): void {
    this.resumeHooks.push(hook);
  }

  get isListening(): boolean {
    return this.connected;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.handlers.size > 0) await this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.probe);
    await this.client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    // keepAlive: a connection that dies without a reset (a vanished host) is noticed by the probe at the latest.
    const client = new pg.Client({ connectionString: this.databaseUrl.value, application_name: LISTENER_NAME, keepAlive: true });
    this.client = client;
    client.on('notification', (message) => {
      for (const handler of this.handlers.get(message.channel) ?? []) handler(message.payload ?? '');
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    try {
      await client.connect();
      await client.query([...this.handlers.keys()].map((channel) => `LISTEN ${client.escapeIdentifier(channel)}`).join('; '));
      // The application shut down while this connection was being made: it ends here, unused.
      if (this.stopped) return void client.end().catch(() => {});
      this.connected = true;
      this.probe = setInterval(() => void this.checkAlive(client), PROBE_MS).unref();
      if (this.attempt > 0) this.logger.log('listening again; catching up');
      this.attempt = 0;
      for (const hook of this.resumeHooks) hook();
    } catch (error) {
      this.lost(client, error as Error);
    }
  }

  /** A LISTEN connection is idle by nature; a round trip proves it still works. */
  private async checkAlive(client: pg.Client): Promise<void> {
    const timeout = setTimeout(() => this.lost(client, new Error('liveness probe timed out')), PROBE_TIMEOUT_MS);
    try {
      await client.query('SELECT 1');
    } catch (error) {
      this.lost(client, error as Error);
    } finally {
      clearTimeout(timeout);
    }
  }

  private lost(client: pg.Client, error: Error): void {
    if (client !== this.client || this.stopped) return;
    clearInterval(this.probe);
    this.client = undefined;
    const wasListening = this.connected;
    this.connected = false;
    client.removeAllListeners();
    client.on('error', () => {});
    void client.end().catch(() => {});
    const delay = RETRY_MS[Math.min(this.attempt++, RETRY_MS.length - 1)];
    // One line when the connection is lost; the retries that follow are quiet until it is back.
    if (wasListening) {
      this.metrics.listenerReconnects.inc();
      this.logger.warn(`listener connection lost (${error.message}); reconnecting`);
    } else this.logger.debug(`listener connection attempt failed (${error.message}); retrying in ${delay} ms`);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }
}
