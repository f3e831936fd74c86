import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { BearerModule } from '../bearer/bearer.module.js';
import { ClientsModule } from '../clients/clients.module.js';
import { HousekeepingModule } from '../database/housekeeping.module.js';
import { HealthModule } from '../health/health.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { TokenModule } from '../token/token.module.js';
import { DeliveryRepository } from './delivery/delivery.repository.js';
import { DeliveryService } from './delivery/delivery.service.js';
import { NotificationListenerService } from './delivery/notification-listener.service.js';
import { NotificationHistoryService } from './publish/notification-history.service.js';
import { NotificationPublishingModule } from './publish/notification-publishing.module.js';
import { NotificationRetentionService } from './publish/notification-retention.service.js';
import { NotificationController } from './publish/notification.controller.js';
import { ConnectionRegistryService } from './streams/connection-registry.service.js';
import { EventStreamController } from './streams/event-stream.controller.js';
import { NotificationMetricsService } from './streams/notification-metrics.service.js';
import { NotificationGateway } from './streams/notification.gateway.js';
import { ProtocolV2MessagesService } from './streams/protocol-v2-messages.service.js';
import { StreamAuthorizerService } from './streams/stream-authorizer.service.js';
import { StreamHeartbeatService } from './streams/stream-heartbeat.service.js';
import { StreamRevocationsService } from './streams/stream-revocations.service.js';
import { StreamsService } from './streams/streams.service.js';

/**
 * The notification service: publish, store, and push report notifications over the WebSocket
 * stream and server-sent events. Three wings, each importing only the ones below it:
 * streams/ (v1 and v2 WebSocket, SSE, compression, heartbeat, revocations: each stream's life)
 * -> delivery/ (what each connection is sent, and the cursors it confirms)
 * -> publish/ (the routes and CLI that store notifications, their store, retention and wake-ups).
 */
@Module({
  imports: [BearerModule, ClientsModule, HousekeepingModule, KeysModule, TokenModule, HealthModule, TerminusModule, NotificationPublishingModule],
  controllers: [NotificationController, EventStreamController],
  providers: [
    ConnectionRegistryService,
    DeliveryRepository,
    DeliveryService,
    NotificationGateway,
    NotificationHistoryService,
    NotificationListenerService,
    NotificationMetricsService,
    NotificationRetentionService,
    ProtocolV2MessagesService,
    StreamAuthorizerService,
    StreamHeartbeatService,
    StreamRevocationsService,
    StreamsService,
  ],
  exports: [StreamAuthorizerService, DeliveryService],
})
export class NotificationModule {}
