import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ClientsService } from '../../clients/clients.service.js';
import { Env } from '../../config/env.js';
import { PgListenerService } from '../../database/pg-listener.service.js';
import { KeysService } from '../../keys/keys.service.js';
import { AccessTokensService } from '../../token/access-tokens.service.js';
import { CloseCode } from './close-codes.js';
import { ConnectionRegistryService, type StreamConnection } from './connection-registry.service.js';
import { NotificationListenerService } from '../delivery/notification-listener.service.js';

/**
 * Closes, on every instance, the streams a revocation reaches: an access token revoked at
 * /sso/revoke, a grant revoked (a replayed code, a reused refresh token, a revoked refresh
 * token), a revoked signing key, a disabled or deleted client, a client whose subscribe scope was
 * withdrawn. Notices travel by NOTIFY; those
 * lost while this instance's listener was down are caught up when it listens again (the revoked
 * sets are re-read, and every client with an open stream here is checked again). A stream is
 * found from its registration on; one revoked while it was being let in is closed by the
 * gateway's re-check right after it registers.
 */
@Injectable()
export class StreamRevocationsService implements OnModuleInit {
  private readonly logger = new Logger(StreamRevocationsService.name);

  constructor(
    private readonly connections: ConnectionRegistryService,
    private readonly accessTokens: AccessTokensService,
    private readonly keys: KeysService,
    private readonly clients: ClientsService,
    private readonly notifications: NotificationListenerService,
    private readonly listener: PgListenerService,
    private readonly env: Env,
  ) {}

  onModuleInit() {
    this.accessTokens.onRevoked((revocation) => {
      if ('jti' in revocation) close(this.connections.ofToken(revocation.jti), 'token revoked');
      else close(this.connections.ofGrant(revocation.grantId), 'grant revoked');
    });
    this.keys.onRevoked((kid) => close(this.connections.ofKey(kid), 'signing key revoked'));
    this.notifications.onClientChanged((clientId) => void this.checkClient(clientId));
    this.listener.onResume(() => void this.checkEveryClient());
  }

  /**
   * Every connection of the client, including one whose delivery has not started yet, and one
   * whose upgrade was authorized while this check was running: they are looked up after it.
   */
  private async checkClient(clientId: string): Promise<void> {
    try {
      const client = await this.clients.findEnabled(clientId);
      if (!client) close(this.connections.ofClient(clientId), 'client disabled or deleted');
      // client:update took away the scope the stream needs.
      else if (!client.scopes.includes(this.env.DEFAULT_CLIENT_SCOPE)) close(this.connections.ofClient(clientId), 'scope withdrawn');
    } catch (error) {
      // A failed check must not become an unhandled rejection (which ends the process); the next resume checks again.
      this.logger.warn(`could not check client ${clientId}: ${(error as Error).message}`);
    }
  }

  /** One client at a time: a reconnection must not flood the pool with a query per client at once. */
  private async checkEveryClient(): Promise<void> {
    for (const clientId of this.connections.clientIds()) await this.checkClient(clientId);
  }
}

const close = (connections: StreamConnection[], reason: string) => {
  for (const connection of connections) connection.transport.close(CloseCode.POLICY, reason);
};
