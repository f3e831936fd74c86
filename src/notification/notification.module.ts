import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ClientsModule } from '../clients/clients.module.js';
import { HealthModule } from '../health/health.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { TokenModule } from '../token/token.module.js';
import { BearerAuthenticator } from './bearer-authenticator.js';
import { BearerGuard } from './bearer.guard.js';
import { ConnectionRegistry } from './connection-registry.js';
import { DeliveryService } from './delivery.service.js';
import { NotificationHistory } from './notification-history.service.js';
import { NotificationListener } from './notification-listener.service.js';
import { NotificationMetrics } from './notification-metrics.js';
import { NotificationPublishingModule } from './notification-publishing.module.js';
import { NotificationRetention } from './notification-retention.js';
import { EventStreamController } from './event-stream.controller.js';
import { NotificationController } from './notification.controller.js';
import { NotificationGateway } from './notification.gateway.js';
import { ProtocolV2Messages } from './protocol-v2-messages.js';
import { StreamAuthorizer } from './stream-authorizer.js';
import { StreamHeartbeat } from './stream-heartbeat.js';
import { StreamRevocations } from './stream-revocations.js';
import { Streams } from './streams.service.js';

/** The notification service: publish, store, and push report notifications over the WebSocket stream. */
@Module({
  imports: [ClientsModule, KeysModule, TokenModule, HealthModule, TerminusModule, NotificationPublishingModule],
  controllers: [NotificationController, EventStreamController],
  providers: [
    BearerAuthenticator,
    BearerGuard,
    ConnectionRegistry,
    DeliveryService,
    NotificationGateway,
    NotificationHistory,
    NotificationListener,
    NotificationMetrics,
    NotificationRetention,
    ProtocolV2Messages,
    StreamAuthorizer,
    StreamHeartbeat,
    StreamRevocations,
    Streams,
  ],
  exports: [BearerAuthenticator, StreamAuthorizer, DeliveryService],
})
export class NotificationModule {}
