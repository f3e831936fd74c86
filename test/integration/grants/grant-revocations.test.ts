import type { TestingModule } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { GrantRevocationsService } from '../../../src/grants/grant-revocations.service.js';
import { RevokedGrantsService } from '../../../src/grants/revoked-grants.service.js';
import { RevokedGrantsModule } from '../../../src/grants/revoked-grants.module.js';
import { SignOutsRepository } from '../../../src/grants/sign-outs.repository.js';
import { startTestingModule } from '../../factories/testing-module.js';
import { createTestDatabase, query } from '../../setup/database.js';

/** The one revoke path: whoever revokes a grant, this instance's mirror is told when, and only when, the revocation commits. */
describe('GrantRevocationsService', () => {
  let url: string;
  let app: TestingModule;
  let dataSource: DataSource;
  let revocations: GrantRevocationsService;
  let told: ReturnType<typeof vi.spyOn>;
  let userId: string;

  beforeAll(async () => {
    url = await createTestDatabase();
    app = await startTestingModule(url, RevokedGrantsModule);
    dataSource = app.get(DataSource);
    revocations = app.get(GrantRevocationsService);
    await query(url, `INSERT INTO clients (id, name, grants, scopes, secret_hash) VALUES ('tv', 'tv', '{}', '{profile}', '\\x00')`);
    [{ id: userId }] = await query<{ id: string }>(url, `INSERT INTO portal_users (username, password_hash) VALUES ('dora', 'x') RETURNING id`);
  });
  afterAll(() => app?.close());

  beforeEach(() => {
    told?.mockRestore();
    // The mirror's own add: the NOTIFY echo reaches the set beneath it, not this method.
    told = vi.spyOn(app.get(RevokedGrantsService), 'add');
  });

  const newGrant = async () => (await query<{ id: string }>(url, `INSERT INTO grants (client_id, user_id, scope, flow) VALUES ('tv', $1, NULL, 'helper') RETURNING id`, [userId]))[0].id;
  const revokedAt = async (id: string) => (await query<{ revoked_at: Date | null }>(url, 'SELECT revoked_at FROM grants WHERE id = $1', [id]))[0].revoked_at;

  it('tells the mirror once the revoking transaction commits, not before', async () => {
    const grantId = await newGrant();
    await dataSource.transaction(async (manager) => {
      expect(await revocations.revoke(manager, { grantId })).toEqual([{ id: grantId, until: expect.any(Date) }]);
      expect(told).not.toHaveBeenCalled();
    });
    expect(told).toHaveBeenCalledExactlyOnceWith({ id: grantId, until: expect.any(Date) });
    expect(await revokedAt(grantId)).not.toBeNull();
  });

  it('never tells the mirror of a revocation that rolled back', async () => {
    const grantId = await newGrant();
    const failure = new Error('the change beside it failed');
    await expect(
      dataSource.transaction(async (manager) => {
        await revocations.revoke(manager, { grantId });
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(told).not.toHaveBeenCalled();
    expect(await revokedAt(grantId)).toBeNull();
    expect(app.get(RevokedGrantsService).has(grantId)).toBe(false);
  });

  it('revokes a grant once: a second revocation revokes and tells nothing', async () => {
    const grantId = await newGrant();
    await revocations.revoke(dataSource.manager, { grantId });
    expect(await revocations.revoke(dataSource.manager, { grantId })).toEqual([]);
    expect(told).toHaveBeenCalledOnce();
  });

  it("a user's sign-out tells the mirror of every grant it revoked, through the same path", async () => {
    const grants = [await newGrant(), await newGrant()];
    expect(await app.get(SignOutsRepository).signOutNow({ userId })).toBeGreaterThanOrEqual(2);
    for (const id of grants) expect(told).toHaveBeenCalledWith({ id, until: expect.any(Date) });
  });

  it("a client's sign-out (its deletion) tells the mirror too, on commit", async () => {
    const grantId = await newGrant();
    await dataSource.transaction(async (manager) => {
      await app.get(SignOutsRepository).signOut(manager, { clientId: 'tv' });
      expect(told).not.toHaveBeenCalled();
    });
    expect(told).toHaveBeenCalledWith({ id: grantId, until: expect.any(Date) });
  });
});
