import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HousekeepingService } from '../database/housekeeping.service.js';
import { RelayHandOversRepository } from './relay/relay-hand-overs.repository.js';
import { RelayedTokensRepository } from './relay/relayed-tokens.repository.js';
import { UpstreamSessionsRepository } from './sign-in/upstream-sessions.repository.js';
import { UpstreamSignInsRepository } from './sign-in/upstream-sign-ins.repository.js';

/**
 * Signing in through identity providers leaves rows behind, deleted in the housekeeping rounds:
 * round trips never finished, hand-overs and relayed tokens past their life, and, once nothing
 * refers to them any more (browser sessions, codes and grants are purged first), upstream sessions.
 */
@Injectable()
export class UpstreamRetentionService implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    private readonly signIns: UpstreamSignInsRepository,
    private readonly handOvers: RelayHandOversRepository,
    private readonly relayed: RelayedTokensRepository,
    private readonly sessions: UpstreamSessionsRepository,
  ) {}

  onModuleInit() {
    this.housekeeping.register((limit) => this.signIns.purgeExpired(limit));
    this.housekeeping.register((limit) => this.handOvers.purgeExpired(limit));
    this.housekeeping.register((limit) => this.relayed.purgeExpired(limit));
    this.housekeeping.register((limit) => this.sessions.purgeExpired(limit), 'unreferenced');
  }
}
