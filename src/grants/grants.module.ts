import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module.js';
import { GrantRevocationsService } from './grant-revocations.service.js';
import { GrantsRepository } from './grants.repository.js';
import { GrantsService } from './grants.service.js';
import { RefreshTokensRepository } from './refresh-tokens.repository.js';
import { SignOutsRepository } from './sign-outs.repository.js';

/**
 * Grants and their refresh tokens, the one owner of the `grants` and `refresh_tokens` tables and
 * of every revocation of a grant (revocations.ts states the rule). The token endpoints issue and
 * rotate through it; users, clients and the grants:* commands end sign-ins through it, and the
 * grants:* commands list a user's grants and revoke one (GrantsService). The
 * server's in-memory mirror of revoked grants is RevokedGrantsModule.
 */
@Module({
  imports: [AuditModule],
  providers: [GrantRevocationsService, GrantsRepository, GrantsService, RefreshTokensRepository, SignOutsRepository],
  exports: [GrantRevocationsService, GrantsRepository, GrantsService, RefreshTokensRepository, SignOutsRepository],
})
export class GrantsModule {}
