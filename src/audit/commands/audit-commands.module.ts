import { Module } from '@nestjs/common';
import { AuditModule } from '../audit.module.js';
import { EventsListCommand } from './events-list.command.js';

@Module({
  imports: [AuditModule],
  providers: [EventsListCommand],
})
export class AuditCommandsModule {}
