import { Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { HousekeepingService, purgeStatement } from '../database/housekeeping.service.js';

/** Revoked access tokens are remembered until they would have expired anyway. */
const REVOKED_ACCESS_TOKEN_PURGE = `DELETE FROM revoked_access_tokens WHERE ctid IN (SELECT ctid FROM revoked_access_tokens WHERE expires_at < now() LIMIT $1)`;

@Injectable()
export class TokenRetentionService implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  onModuleInit() {
    this.housekeeping.register(purgeStatement(this.dataSource, REVOKED_ACCESS_TOKEN_PURGE));
  }
}
