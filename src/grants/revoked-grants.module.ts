import { Module } from '@nestjs/common';
import { GrantsModule } from './grants.module.js';
import { RevokedGrants } from './revoked-grants.js';

/** The server's mirror of revoked grants (RevokedGrants), apart from GrantsModule so that the CLI, which needs none, neither listens nor reads it. */
@Module({
  imports: [GrantsModule],
  providers: [RevokedGrants],
  exports: [RevokedGrants],
})
export class RevokedGrantsModule {}
