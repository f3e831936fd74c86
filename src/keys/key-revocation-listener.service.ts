import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { PgListenerService } from '../database/pg-listener.service.js';
import { KEY_REVOKED_CHANNEL, KEY_ROTATED_CHANNEL } from './key-store.js';
import { KeysService } from './keys.service.js';

const RELOAD_RETRY_MS = 5_000;

/**
 * Tells this instance's KeysService of every keys:revoke and every rotation, wherever it ran.
 * NOTIFY only wakes: a notice sent while the listener was down is lost, so after every
 * (re)connection the keys and the revoked kids are read again, until that read succeeds.
 */
@Injectable()
export class KeyRevocationListenerService implements OnApplicationShutdown {
  private readonly logger = new Logger(KeyRevocationListenerService.name);
  private retry?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    listener: PgListenerService,
    private readonly keys: KeysService,
  ) {
    // Subscribed in the constructor: the listener connects during bootstrap.
    listener.on(KEY_REVOKED_CHANNEL, (kid) => {
      if (kid) keys.keyRevoked(kid);
    });
    // A new key is published: the next use reads the ring again, learning when that key signs.
    listener.on(KEY_ROTATED_CHANNEL, () => keys.forgetRing());
    listener.onResume(() => void this.catchUp());
  }

  /** A read still under way at shutdown (the database closing under it) schedules no retry. */
  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.retry);
  }

  private async catchUp(): Promise<void> {
    clearTimeout(this.retry);
    try {
      await this.keys.refresh();
    } catch (error) {
      if (this.stopped) return;
      this.logger.warn(`could not read the signing keys after reconnecting (${(error as Error).message}); retrying`);
      this.retry = setTimeout(() => void this.catchUp(), RELOAD_RETRY_MS).unref();
    }
  }
}
