import { Module } from '@nestjs/common';
import { HousekeepingService } from './housekeeping.service.js';

/**
 * The housekeeping scheduler, for the modules that register their tables' purges. Only the
 * service's modules import it (never a CLI command's): a command does not purge.
 */
@Module({
  providers: [HousekeepingService],
  exports: [HousekeepingService],
})
export class HousekeepingModule {}
