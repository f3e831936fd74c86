import type { TestingModule } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../../src/users/password.js';
import { UsersModule } from '../../../src/users/users.module.js';
import { UsersService } from '../../../src/users/users.service.js';
import { startTestingModule } from '../../factories/testing-module.js';
import { createTestDatabase, query } from '../../setup/database.js';

const PASSWORD = 'correct horse battery';

describe('UsersService', () => {
  let url: string;
  let app: TestingModule;
  let users: UsersService;

  beforeAll(async () => {
    url = await createTestDatabase();
    app = await startTestingModule(url, UsersModule);
    users = app.get(UsersService);
  });
  afterAll(() => app?.close());

  const storedNamed = (username: string) =>
    query<{ id: string; password_hash: string }>(url, 'SELECT id, password_hash FROM portal_users WHERE lower(username) = lower($1)', [username]);

  it('creates a user, storing an argon2id hash of the password and never the password', async () => {
    const user = await users.create({ username: 'navigator', password: PASSWORD });
    expect(user).toEqual({ id: expect.any(String), username: 'navigator', provider: null, enabled: true, created_at: expect.any(String) });
    expect(Number.isNaN(Date.parse(user.created_at))).toBe(false);
    const [row] = await storedNamed('navigator');
    expect(row.id).toBe(user.id);
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(row.password_hash).not.toContain(PASSWORD);
    expect(await verifyPassword(row.password_hash, PASSWORD)).toBe(true);
  });

  it.each([
    ['shorter than 8 characters', 'seven77'],
    ['empty', ''],
  ])('refuses a password %s as invalid input and stores nothing', async (_, password) => {
    const username = `short-${password.length}`;
    await expect(users.create({ username, password })).rejects.toMatchObject({ name: 'AppError', code: 'invalid_input' });
    expect(await storedNamed(username)).toEqual([]);
  });

  it('refuses a username differing only in case from an existing one', async () => {
    await users.create({ username: 'Captain', password: PASSWORD });
    await expect(users.create({ username: 'cAPTAIN', password: PASSWORD })).rejects.toMatchObject({ name: 'AppError', code: 'conflict' });
    expect(await storedNamed('captain')).toHaveLength(1);
  });

  it('finds a user by username, ignoring case', async () => {
    const created = await users.create({ username: 'Purser', password: PASSWORD });
    expect(await users.findByUsername('pURSER')).toMatchObject({ id: created.id, username: 'Purser' });
    expect(await users.findByUsername('nobody')).toBeNull();
  });
});

describe('verifyPassword', () => {
  it('accepts the right password and refuses a wrong one', async () => {
    const hash = await hashPassword(PASSWORD);
    expect(await verifyPassword(hash, PASSWORD)).toBe(true);
    expect(await verifyPassword(hash, `${PASSWORD}!`)).toBe(false);
  });

  it('answers false, not an error, for a garbage hash', async () => {
    expect(await verifyPassword('not-a-phc-string', PASSWORD)).toBe(false);
    expect(await verifyPassword('', PASSWORD)).toBe(false);
  });
});
