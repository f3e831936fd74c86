import { Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PREVIOUS_RELEASE_LISTENER } from '../database/pg-listener.service.js';

/** How often PostgreSQL is asked; an instance of the previous release that starts meanwhile misses this long of wake-ups. */
const CHECK_MS = 1_000;

/**
 * Whether an instance of the previous release is listening on this database, as during a rolling
 * upgrade (or a rollback): its listening connection is named PREVIOUS_RELEASE_LISTENER, and it
 * reads only the per-recipient wake-up, so publishes send that one too until it is gone. Until
 * PostgreSQL has answered once, and while it does not answer, one is taken to be there.
 */
@Injectable()
export class PreviousReleaseListeners implements OnModuleInit, OnApplicationShutdown {
  private listening = true;
  private timer?: NodeJS.Timeout;
  private checking = false;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  get present(): boolean {
    return this.listening;
  }

  onModuleInit() {
    void this.check();
    this.timer = setInterval(() => void this.check(), CHECK_MS).unref();
  }

  onApplicationShutdown() {
    clearInterval(this.timer);
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const [{ present }]: { present: boolean }[] = await this.dataSource.query(
        `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1) AS present`,
        [PREVIOUS_RELEASE_LISTENER],
      );
      this.listening = present;
    } catch {
      this.listening = true;
    } finally {
      this.checking = false;
    }
  }
}
