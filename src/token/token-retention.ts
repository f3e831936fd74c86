import { Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { HousekeepingService, purgeStatement } from '../database/housekeeping.service.js';

/**
 * The token room's expired rows, purged in the housekeeping rounds. Consumed codes are kept until
 * they expire, so a replay inside their lifetime is still recognised as one.
 */
const CODE_PURGES = [
  `DELETE FROM authorizations WHERE ctid IN (SELECT ctid FROM authorizations WHERE expires_at < now() LIMIT $1)`,
  `DELETE FROM authorization_codes WHERE ctid IN (SELECT ctid FROM authorization_codes WHERE expires_at < now() LIMIT $1)`,
];

/** Revoked access tokens are remembered until they would have expired anyway. */
const REVOKED_ACCESS_TOKEN_PURGE = `DELETE FROM revoked_access_tokens WHERE ctid IN (SELECT ctid FROM revoked_access_tokens WHERE expires_at < now() LIMIT $1)`;

@Injectable()
export class TokenRetention implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  onModuleInit() {
    for (const sql of [...CODE_PURGES, REVOKED_ACCESS_TOKEN_PURGE]) this.housekeeping.register(purgeStatement(this.dataSource, sql));
  }
}
