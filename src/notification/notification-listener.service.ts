import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { CLIENT_CHANGED_CHANNEL } from '../clients/clients.repository.js';
import { PgListener } from '../database/pg-listener.service.js';
import { HealthRegistry } from '../health/health-registry.js';
import { DeliveryService } from './delivery.service.js';
import { NOTIFICATION_CHANNEL } from './notifications.repository.js';

/** Hooks for changes of a client elsewhere (CLI, other instances): the gateway closes a disabled client's streams. */
export type ClientChangedHandler = (clientId: string) => void;

/**
 * The stream's side of the shared LISTEN connection: a publish wakes the recipient's pump, a
 * reconnection wakes every local recipient (a wake-up lost meanwhile costs nothing), and the
 * connection's state is a /health component.
 */
@Injectable()
export class NotificationListener {
  constructor(
    private readonly listener: PgListener,
    delivery: DeliveryService,
    health: HealthRegistry,
    indicator: HealthIndicatorService,
  ) {
    listener.on(NOTIFICATION_CHANNEL, (recipient) => delivery.wake(recipient));
    listener.onResume(() => delivery.wakeAll());
    health.register('notification-listener', () => {
      const check = indicator.check('notification-listener');
      return listener.isListening ? check.up() : check.down({ message: 'not listening' });
    });
  }

  onClientChanged(handler: ClientChangedHandler): void {
    this.listener.on(CLIENT_CHANGED_CHANNEL, handler);
  }
}
