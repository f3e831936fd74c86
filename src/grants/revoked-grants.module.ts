import { Module } from '@nestjs/common';
import { GrantsModule } from './grants.module.js';
import { RevokedGrantsService } from './revoked-grants.service.js';

/** The server's mirror of revoked grants (RevokedGrantsService), apart from GrantsModule so that the CLI, which needs none, neither listens nor reads it. */
@Module({
  imports: [GrantsModule],
  providers: [RevokedGrantsService],
  exports: [RevokedGrantsService],
})
export class RevokedGrantsModule {}
