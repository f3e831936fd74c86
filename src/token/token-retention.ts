import { Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { USER_ACCESS_TOKEN_TTL } from '../config/env.js';
import { HousekeepingService, purgeStatement } from '../database/housekeeping.service.js';

/**
 * The token room's expired rows, purged in the housekeeping rounds. Consumed codes are kept until
 * they expire, so a replay inside their lifetime is still recognised as one.
 */
const CODE_PURGES = [
  `DELETE FROM authorizations WHERE ctid IN (SELECT ctid FROM authorizations WHERE expires_at < now() LIMIT $1)`,
  `DELETE FROM authorization_codes WHERE ctid IN (SELECT ctid FROM authorization_codes WHERE expires_at < now() LIMIT $1)`,
];

/**
 * GRANTS' PURGES, kept here until src/grants/ (the one owner of grants, refresh tokens and
 * revocations, issue 35) registers them itself. In this order: the grant purge relies on the
 * refresh-token purge before it.
 */
const GRANT_PURGES = [
  // Kept until the access token issued with it has expired too (REFRESH_TOKEN_TTL may be shorter
  // than an access token's life): the grant purge below relies on that.
  `DELETE FROM refresh_tokens WHERE ctid IN (SELECT ctid FROM refresh_tokens WHERE expires_at < now()
     AND issued_at < now() - interval '${USER_ACCESS_TOKEN_TTL} seconds' LIMIT $1)`,
  `DELETE FROM revoked_access_tokens WHERE ctid IN (SELECT ctid FROM revoked_access_tokens WHERE expires_at < now() LIMIT $1)`,
  // A grant without refresh tokens, older than any access token it issued, has nothing left alive.
  `DELETE FROM grants g WHERE g.id IN (SELECT id FROM grants WHERE created_at < now() - interval '${USER_ACCESS_TOKEN_TTL} seconds'
     AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = grants.id) LIMIT $1)`,
];

@Injectable()
export class TokenRetention implements OnModuleInit {
  constructor(
    private readonly housekeeping: HousekeepingService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  onModuleInit() {
    for (const sql of [...CODE_PURGES, ...GRANT_PURGES]) this.housekeeping.register(purgeStatement(this.dataSource, sql));
  }
}
