import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ClientsModule } from '../clients/clients.module.js';
import { HealthModule } from '../health/health.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { TokenModule } from '../token/token.module.js';
import { BearerAuthenticator } from './bearer-authenticator.js';
import { BearerGuard } from './bearer.guard.js';
import { ConnectionRegistry } from './streams/connection-registry.js';
import { DeliveryRepository } from './delivery/delivery.repository.js';
import { DeliveryService } from './delivery/delivery.service.js';
import { NotificationHistory } from './publish/notification-history.service.js';
import { NotificationListener } from './delivery/notification-listener.service.js';
import { NotificationMetrics } from './streams/notification-metrics.js';
import { NotificationPublishingModule } from './publish/notification-publishing.module.js';
import { NotificationRetention } from './publish/notification-retention.js';
import { EventStreamController } from './streams/event-stream.controller.js';
import { NotificationController } from './publish/notification.controller.js';
import { NotificationGateway } from './streams/notification.gateway.js';
import { ProtocolV2Messages } from './streams/protocol-v2-messages.js';
import { StreamAuthorizer } from './streams/stream-authorizer.js';
import { StreamHeartbeat } from './streams/stream-heartbeat.js';
import { StreamRevocations } from './streams/stream-revocations.js';
import { Streams } from './streams/streams.service.js';

/** The notification service: publish, store, and push report notifications over the WebSocket stream. */
@Module({
  imports: [ClientsModule, KeysModule, TokenModule, HealthModule, TerminusModule, NotificationPublishingModule],
  controllers: [NotificationController, EventStreamController],
  providers: [
    BearerAuthenticator,
    BearerGuard,
    ConnectionRegistry,
    DeliveryRepository,
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
