import { randomBytes } from 'node:crypto';
import { Module } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HousekeepingService } from '../../../src/database/housekeeping.service.js';
import { IdentityProvidersInstanceModule } from '../../../src/identity-providers/identity-providers-instance.module.js';
import { SessionsModule } from '../../../src/sessions/sessions.module.js';
import { UsersInstanceModule } from '../../../src/users/users-instance.module.js';
import { UsersService } from '../../../src/users/users.service.js';
import { startTestingModule } from '../../factories/testing-module.js';
import { createTestDatabase, query } from '../../setup/database.js';

/** The owners of the sign-in leftovers, as the service builds them: each registers its purge. */
@Module({ imports: [UsersInstanceModule, SessionsModule, IdentityProvidersInstanceModule] })
class SignInLeftoversModule {}

describe('HousekeepingService, with the purges their owners registered', () => {
  let url: string;
  let app: TestingModule;
  let userId: string;

  const count = async (table: string, where: string, params: unknown[]) =>
    (await query<{ n: number }>(url, `SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, params))[0].n;
  const upstreamSession = async (age: string) =>
    (await query<{ id: string }>(url, `INSERT INTO upstream_sessions (provider, user_id, created_at) VALUES ('corp', $1, now() - $2::interval) RETURNING id`, [userId, age]))[0].id;
  const browserSession = (upstreamSessionId: string, expiresIn: string) =>
    query(
      url,
      `INSERT INTO browser_sessions (secret_hash, sid, user_id, upstream_session_id, auth_time, expires_at) VALUES ($1, $2, $3, $4, now(), now() + $5::interval)`,
      [randomBytes(32), randomBytes(8).toString('hex'), userId, upstreamSessionId, expiresIn],
    );
  const signIn = (expiresIn: string) =>
    query(
      url,
      `INSERT INTO upstream_sign_ins (state_hash, provider, browser_hash, nonce, code_verifier_sealed, purpose, expires_at)
       VALUES ($1, 'corp', $2, 'n', $3, '{}', now() + $4::interval)`,
      [randomBytes(32), randomBytes(32), randomBytes(16), expiresIn],
    );
  const failure = (key: string, lastFailure: string) =>
    query(url, `INSERT INTO login_failures (key, failures, last_failure_at, blocked_until) VALUES ($1, 3, now() - $2::interval, now() - $2::interval)`, [key, lastFailure]);

  beforeAll(async () => {
    url = await createTestDatabase();
    // No timer-driven purge during the test: only the explicit calls below run.
    app = await startTestingModule(url, SignInLeftoversModule, { HOUSEKEEPING_INTERVAL: '86400' });
    userId = (await app.get(UsersService).create({ username: 'purged-sailor', password: 'correct horse battery' })).id;
  });
  afterAll(() => app?.close());

  it("deletes each owner's expired rows in one round, the upstream sessions they set free last, and keeps the live ones", async () => {
    const [freed, stillReferred, young] = [await upstreamSession('2 days'), await upstreamSession('2 days'), await upstreamSession('1 hour')];
    await browserSession(freed, '-1 second');
    await browserSession(stillReferred, '1 hour');
    await signIn('-1 second');
    await signIn('10 minutes');
    await failure('pair:old', '2 days');
    await failure('pair:recent', '1 hour');

    // expired: a browser session, a sign-in and a slow-down; then the upstream session the browser session held
    expect(await app.get(HousekeepingService).purge()).toBe(4);

    expect(await count('browser_sessions', 'true', [])).toBe(1);
    expect(await count('upstream_sign_ins', 'expires_at > now()', [])).toBe(1);
    expect(await count('upstream_sign_ins', 'true', [])).toBe(1);
    expect(await count('login_failures', 'key = ANY($1)', [['pair:old', 'pair:recent']])).toBe(1);
    expect(await count('login_failures', 'key = $1', ['pair:recent'])).toBe(1);
    expect(await count('upstream_sessions', 'id = ANY($1::uuid[])', [[stillReferred, young]])).toBe(2);
    expect(await count('upstream_sessions', 'id = $1', [freed])).toBe(0);

    // a second round finds nothing left to do
    expect(await app.get(HousekeepingService).purge()).toBe(0);
  });
});
