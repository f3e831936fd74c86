import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataSourceOptions, runMigrations } from '../../../src/database/data-source.js';
import { DeviceCodesRepository, type NewDeviceCode, SLOW_DOWN_STEP_SECONDS } from '../../../src/codes/device-codes.repository.js';
import { generateUserCode } from '../../../src/device-flow/user-code.js';
import { createTestDatabase, query } from '../../setup/database.js';

/** The sign-in behind an approval form (a browser session's). */
const SIGN_IN = { authTime: new Date('2030-01-02T03:04:05Z'), sid: 'session-sid' };

/** The device flow's storage on a real PostgreSQL: what a poll finds, and that polls on several connections see each other. */
describe('DeviceCodesRepository', () => {
  let url: string;
  let dataSource: DataSource;
  let codes: DeviceCodesRepository;
  let userId: string;

  beforeAll(async () => {
    url = await createTestDatabase();
    dataSource = await new DataSource(await dataSourceOptions(url, 8)).initialize();
    await runMigrations(dataSource);
    codes = new DeviceCodesRepository(dataSource);
    for (const id of ['tv', 'other']) await query(url, `INSERT INTO clients (id, name, grants, scopes, secret_hash) VALUES ($1, $1, '{}', '{profile}', '\\x00')`, [id]);
    [{ id: userId }] = await query<{ id: string }>(url, `INSERT INTO portal_users (username, password_hash) VALUES ('dora', 'x') RETURNING id`);
  });
  afterAll(() => dataSource?.destroy());

  const start = async (changes: Partial<NewDeviceCode> = {}) => {
    const code: NewDeviceCode = { deviceCodeHash: randomBytes(32), userCode: generateUserCode(), clientId: 'tv', scope: 'profile', lifetimeSeconds: 600, intervalSeconds: 5, ...changes };
    expect(await codes.insert(code)).toBe(true);
    return code;
  };
  const poll = (code: NewDeviceCode, clientId = code.clientId) => dataSource.transaction((manager) => codes.poll(manager, code.deviceCodeHash, clientId));
  /** As if the device's last poll was `seconds` ago. */
  const lastPolledAgo = (code: NewDeviceCode, seconds: number) =>
    query(url, `UPDATE device_codes SET last_polled_at = clock_timestamp() - make_interval(secs => $2) WHERE device_code_hash = $1`, [code.deviceCodeHash, seconds]);
  /** The user signs in on the verification page and decides with the approval form they were given. */
  const decide = async (code: NewDeviceCode, decision: 'approved' | 'denied') => {
    const nonceHash = randomBytes(32);
    return (await codes.signIn(code.userCode, userId, null, nonceHash, null, SIGN_IN)) && codes.decide(code.userCode, nonceHash, decision);
  };
  const interval = async (code: NewDeviceCode) =>
    (await query<{ interval_seconds: number }>(url, 'SELECT interval_seconds FROM device_codes WHERE device_code_hash = $1', [code.deviceCodeHash]))[0].interval_seconds;

  it('refuses a second authorization with a user code already taken, so the caller draws another', async () => {
    const first = await start();
    expect(await codes.insert({ ...first, deviceCodeHash: randomBytes(32) })).toBe(false);
  });

  it('answers pending to the first poll, never slow_down, and slow_down to one within the interval, growing it by 5 s', async () => {
    const code = await start();
    expect(await poll(code)).toEqual({ outcome: 'pending' });
    expect(await poll(code)).toEqual({ outcome: 'slow_down' });
    expect(await interval(code)).toBe(5 + SLOW_DOWN_STEP_SECONDS);
    await lastPolledAgo(code, 6);
    expect(await poll(code)).toEqual({ outcome: 'slow_down' }); // 6 s is within the grown 10 s
    await lastPolledAgo(code, 16);
    expect(await poll(code)).toEqual({ outcome: 'pending' });
    expect(await interval(code)).toBe(5 + 2 * SLOW_DOWN_STEP_SECONDS);
  });

  it('lets exactly one of many simultaneous polls through; the others are slow_down', async () => {
    const code = await start();
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => poll(code)));
    expect(outcomes.map(({ outcome }) => outcome).sort()).toEqual(['pending', 'slow_down', 'slow_down', 'slow_down', 'slow_down', 'slow_down']);
  });

  it('shows a pending code to the verification page until it is decided, and takes one decision only', async () => {
    const code = await start({ scope: null });
    expect(await codes.findByUserCode(code.userCode)).toMatchObject({ clientId: 'tv', scope: null, state: 'pending', signedInUsername: null, signedInUserDisabled: false });
    const nonceHash = randomBytes(32);
    expect(await codes.signIn(code.userCode, userId, null, nonceHash, null, SIGN_IN)).toBe(true);
    expect(await codes.decide(code.userCode, nonceHash, 'approved')).toEqual({ userId });
    expect(await codes.decide(code.userCode, nonceHash, 'denied')).toBeNull();
    expect(await codes.findByUserCode(code.userCode)).toMatchObject({ state: 'approved', signedInUsername: expect.any(String) });
    expect(await codes.signIn(code.userCode, userId, null, randomBytes(32), null, SIGN_IN)).toBe(false);
  });

  it("takes a decision only from the latest sign-in's approval form", async () => {
    const code = await start();
    const [first, second] = [randomBytes(32), randomBytes(32)];
    await codes.signIn(code.userCode, userId, null, first, null, SIGN_IN);
    await codes.signIn(code.userCode, userId, null, second, null, SIGN_IN);
    expect(await codes.decide(code.userCode, first, 'approved')).toBeNull();
    expect(await codes.decide(code.userCode, randomBytes(32), 'approved')).toBeNull();
    expect(await codes.decide(code.userCode, second, 'denied')).toEqual({ userId });
  });

  it('hands an approved code over once, to its own client only', async () => {
    const code = await start();
    await decide(code, 'approved');
    expect(await poll(code, 'other')).toEqual({ outcome: 'invalid' });
    expect(await poll(code)).toEqual({ outcome: 'approved', userId, scope: 'profile', upstreamSessionId: null, signIn: SIGN_IN });
    await lastPolledAgo(code, 60);
    expect(await poll(code)).toEqual({ outcome: 'invalid' });
  });

  it('keeps an approved code when the transaction that consumed it fails (the grant was never made)', async () => {
    const code = await start();
    await decide(code, 'approved');
    await expect(
      dataSource.transaction(async (manager) => {
        expect(await codes.poll(manager, code.deviceCodeHash, 'tv')).toMatchObject({ outcome: 'approved' });
        throw new Error('issuing the tokens failed');
      }),
    ).rejects.toThrow('issuing the tokens failed');
    await lastPolledAgo(code, 60);
    expect(await poll(code)).toMatchObject({ outcome: 'approved' });
  });

  it('answers denied after the user said no, and expired after the lifetime, by the database clock', async () => {
    const denied = await start();
    await decide(denied, 'denied');
    expect(await poll(denied)).toEqual({ outcome: 'denied' });

    const expired = await start();
    await query(url, `UPDATE device_codes SET expires_at = now() - interval '1 second' WHERE device_code_hash = $1`, [expired.deviceCodeHash]);
    expect(await poll(expired)).toEqual({ outcome: 'expired' });
    expect(await codes.findByUserCode(expired.userCode)).toMatchObject({ state: 'expired' });
    expect(await codes.findByUserCode(denied.userCode)).toMatchObject({ state: 'denied' });
    expect(await decide(expired, 'approved')).toBe(false);
  });

  it('answers invalid for an unknown device code', async () => {
    expect(await dataSource.transaction((manager) => codes.poll(manager, randomBytes(32), 'tv'))).toEqual({ outcome: 'invalid' });
  });

  it('purges expired authorizations in batches, and only those', async () => {
    const live = await start();
    const expired = await Promise.all([start(), start(), start()]);
    await query(url, `UPDATE device_codes SET expires_at = now() - interval '1 second' WHERE device_code_hash = ANY($1)`, [expired.map((code) => code.deviceCodeHash)]);
    const before = Number((await query<{ n: string }>(url, 'SELECT count(*) AS n FROM device_codes'))[0].n);
    expect(await codes.purgeExpired(2)).toEqual({ deleted: 2, undecided: 2 });
    expect((await codes.purgeExpired(1000)).deleted).toBeGreaterThanOrEqual(1);
    expect(await codes.findByUserCode(live.userCode)).toMatchObject({ state: 'pending' });
    expect(Number((await query<{ n: string }>(url, 'SELECT count(*) AS n FROM device_codes'))[0].n)).toBeLessThanOrEqual(before - 3);
  });
});
