import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { CLIENT_CHANGED_CHANNEL } from '../../clients/clients.repository.js';
import { PgListenerService } from '../../database/pg-listener.service.js';
import { HealthRegistryService } from '../../health/health-registry.service.js';
import { DeliveryService } from './delivery.service.js';
import { PREVIOUS_RELEASE_CHANNEL, WAKE_CHANNEL, wakeKeysIn } from '../publish/wake-ups.js';

/** Hooks for changes of a client elsewhere (CLI, other instances): the gateway closes a disabled client's streams. */
export type ClientChangedHandler = (clientId: string) => void;

/** While the LISTEN connection is down, every local recipient is read this often instead. */
const POLL_WHILE_DEAF_MS = 1_000;

/**
 * The stream's side of the shared LISTEN connection: a publish wakes its recipients' pumps, a
 * reconnection wakes every local recipient (a wake-up lost meanwhile costs nothing), and the
 * connection's state is a /health component. While it is down, local recipients are read on a
 * timer, so streams are late, never silent.
 */
@Injectable()
export class NotificationListenerService implements OnModuleInit, OnModuleDestroy {
  private poller?: NodeJS.Timeout;

  constructor(
    private readonly listener: PgListenerService,
    private readonly delivery: DeliveryService,
    health: HealthRegistryService,
    indicator: HealthIndicatorService,
  ) {
    listener.on(WAKE_CHANNEL, (payload) => delivery.wakeByKeys(wakeKeysIn(payload)));
    // An instance of the previous release publishing (during a rolling upgrade) wakes recipient by recipient.
    listener.on(PREVIOUS_RELEASE_CHANNEL, (recipient) => delivery.wake(recipient));
    listener.onResume(() => delivery.wakeAll());
    health.register('notification-listener', () => {
      const check = indicator.check('notification-listener');
      return listener.isListening ? check.up() : check.down({ message: 'not listening' });
    });
  }

  onModuleInit() {
    this.poller = setInterval(() => {
      if (!this.listener.isListening) this.delivery.wakeAll();
    }, POLL_WHILE_DEAF_MS).unref();
  }

  onModuleDestroy() {
    clearInterval(this.poller);
  }

  onClientChanged(handler: ClientChangedHandler): void {
    this.listener.on(CLIENT_CHANGED_CHANNEL, handler);
  }
}
