import { createHash } from 'node:crypto';
import type { TestingModule } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsModule } from '../../../src/clients/clients.module.js';
import { ClientsService } from '../../../src/clients/clients.service.js';
import { startTestingModule } from '../../factories/testing-module.js';
import { createTestDatabase, query } from '../../setup/database.js';

type CreateInput = Parameters<ClientsService['create']>[0];

const BASE64URL_256_BITS = /^[A-Za-z0-9_-]{43}$/;
const DAY_MS = 86_400_000;

/** Same length and alphabet as `secret`, one character different. */
const almost = (secret: string) => secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A');

describe('ClientsService', () => {
  let url: string;
  let app: TestingModule;
  let clients: ClientsService;

  beforeAll(async () => {
    url = await createTestDatabase();
    app = await startTestingModule(url, ClientsModule, { DEFAULT_CLIENT_SCOPE: 'reports:read' });
    clients = app.get(ClientsService);
  });
  afterAll(() => app?.close());

  const storedRow = async (id: string) => (await query(url, 'SELECT * FROM clients WHERE id = $1', [id]))[0];
  const storedNamed = async (name: string) => query(url, 'SELECT id FROM clients WHERE lower(name) = lower($1)', [name]);

  it('returns an id and a 43-character base64url secret, with the default grants', async () => {
    const client = await clients.create({ name: 'Planner app' });
    expect(client).toMatchObject({ name: 'Planner app', grants: ['authorization_code', 'refresh_token'], scopes: [], enabled: true });
    expect(client.client_id).toEqual(expect.any(String));
    expect(client.client_secret).toMatch(BASE64URL_256_BITS);
    expect(await clients.show(client.client_id)).toMatchObject({ grants: ['authorization_code', 'refresh_token'] });
  });

  it('gives a client-credentials client without scopes the DEFAULT_CLIENT_SCOPE', async () => {
    const client = await clients.create({ name: 'Report robot', grants: ['client_credentials'] });
    expect(client.scopes).toEqual(['reports:read']);
    expect((await clients.show(client.client_id)).scopes).toEqual(['reports:read']);
  });

  it('stores only the 32-byte SHA-256 of the secret, never the secret itself', async () => {
    const { client_id, client_secret } = await clients.create({ name: 'Hashed' });
    const row = await storedRow(client_id);
    expect(row.secret_hash).toEqual(createHash('sha256').update(client_secret).digest());
    expect((row.secret_hash as Buffer).length).toBe(32);
    const everyValue = Object.values(row).flatMap((value) =>
      Buffer.isBuffer(value) ? [value.toString('utf8'), value.toString('base64url')] : [JSON.stringify(value)],
    );
    expect(everyValue.filter((text) => text.includes(client_secret))).toEqual([]);
  });

  it('refuses a duplicate client name, ignoring case', async () => {
    await clients.create({ name: 'Fleet Board' });
    await expect(clients.create({ name: 'fleet board' })).rejects.toMatchObject({ name: 'AppError', code: 'conflict' });
    expect(await storedNamed('Fleet Board')).toHaveLength(1);
  });

  it.each<[string, Partial<CreateInput>]>([
    ['an unknown grant', { grants: ['password'] as never }],
    ['a redirect range over public addresses', { redirectPatterns: ['http://8.8.8.0/24:*/cb'] }],
    ['a redirect URL with user information', { redirectPatterns: ['http://u:p@host/cb'] }],
    ['a scope containing a space', { scopes: ['reports read'] }],
  ])('refuses %s as invalid input and stores nothing', async (label, input) => {
    const name = `Invalid: ${label}`;
    await expect(clients.create({ name, ...input })).rejects.toMatchObject({ name: 'AppError', code: 'invalid_input' });
    expect(await storedNamed(name)).toEqual([]);
  });

  it('never shows a secret or a hash in list or show', async () => {
    const created = await clients.create({ name: 'Discreet' });
    const rotated = await clients.rotateSecret(created.client_id);
    const shown = await clients.show(created.client_id);
    const listed = (await clients.list()).find((client) => client.client_id === created.client_id);
    expect(listed).toEqual(shown);
    expect(Object.keys(shown).filter((key) => /secret|hash/.test(key))).toEqual(['previous_secret_expires_at']);
    expect(JSON.stringify(shown)).not.toContain(created.client_secret);
    expect(JSON.stringify(shown)).not.toContain(rotated.client_secret);
  });

  it.each([
    ['show', (id: string) => clients.show(id)],
    ['rotateSecret', (id: string) => clients.rotateSecret(id)],
    ['setEnabled', (id: string) => clients.setEnabled(id, false)],
  ])('answers not_found from %s for an unknown id', async (_, call) => {
    await expect(call('no-such-client')).rejects.toMatchObject({ name: 'AppError', code: 'not_found' });
  });

  it('isPostLogoutRedirectAllowed: a registered URL of this client, after an update too, and nothing else', async () => {
    const { client_id } = await clients.create({ name: 'Logout page', postLogoutRedirectUris: ['https://portal.example/bye', 'http://127.0.0.1:3000/'] });
    const other = await clients.create({ name: 'Other logout page', postLogoutRedirectUris: ['https://other.example/bye'] });
    const allowed = async (id: string, url: string) => clients.isPostLogoutRedirectAllowed((await clients.find(id))!, url);
    expect(await allowed(client_id, 'https://PORTAL.example:443/bye')).toBe(true);
    expect(await allowed(client_id, 'http://127.0.0.1:3000')).toBe(true);
    expect(await allowed(client_id, 'https://other.example/bye')).toBe(false);
    expect(await allowed(other.client_id, 'https://portal.example/bye')).toBe(false);
    await clients.update(client_id, { postLogoutRedirectUris: ['https://portal.example/signed-out'] });
    expect(await allowed(client_id, 'https://portal.example/bye')).toBe(false);
    expect(await allowed(client_id, 'https://portal.example/signed-out')).toBe(true);
  });

  it('authenticates the right secret only', async () => {
    const { client_id, client_secret } = await clients.create({ name: 'Authenticated' });
    expect(await clients.authenticate(client_id, client_secret)).toMatchObject({ id: client_id, name: 'Authenticated' });
    expect(await clients.authenticate(client_id, almost(client_secret))).toBeNull();
    expect(await clients.authenticate(client_id, '')).toBeNull();
    expect(await clients.authenticate('no-such-client', client_secret)).toBeNull();
  });

  it('disables a client, refusing its right secret, and enables it again', async () => {
    const { client_id, client_secret } = await clients.create({ name: 'Switchable' });
    expect(await clients.setEnabled(client_id, false)).toMatchObject({ client_id, enabled: false });
    expect((await clients.show(client_id)).enabled).toBe(false);
    expect(await clients.authenticate(client_id, client_secret)).toBeNull();
    expect(await clients.setEnabled(client_id, true)).toMatchObject({ client_id, enabled: true });
    expect(await clients.authenticate(client_id, client_secret)).toMatchObject({ id: client_id });
  });

  it('rotates the secret, the old one still working for CLIENT_SECRET_OVERLAP', async () => {
    const created = await clients.create({ name: 'Rotated' });
    const before = Date.now();
    const rotated = await clients.rotateSecret(created.client_id);
    expect(rotated.client_secret).toMatch(BASE64URL_256_BITS);
    expect(rotated.client_secret).not.toBe(created.client_secret);
    const overlapEnd = Date.parse(rotated.previous_secret_expires_at!);
    expect(overlapEnd).toBeGreaterThanOrEqual(before + DAY_MS);
    expect(overlapEnd).toBeLessThanOrEqual(Date.now() + DAY_MS);
    expect(await clients.authenticate(created.client_id, rotated.client_secret)).toMatchObject({ id: created.client_id });
    expect(await clients.authenticate(created.client_id, created.client_secret)).toMatchObject({ id: created.client_id });
  });

  it('forgets the first secret after a second rotation', async () => {
    const created = await clients.create({ name: 'Rotated twice' });
    await clients.rotateSecret(created.client_id);
    const latest = await clients.rotateSecret(created.client_id);
    expect(await clients.authenticate(created.client_id, created.client_secret)).toBeNull();
    expect(await clients.authenticate(created.client_id, latest.client_secret)).toMatchObject({ id: created.client_id });
  });

  it('stops accepting the old secret at once when CLIENT_SECRET_OVERLAP is 0', async () => {
    const strict = await startTestingModule(url, ClientsModule, { CLIENT_SECRET_OVERLAP: '0' });
    try {
      const service = strict.get(ClientsService);
      const created = await service.create({ name: 'No overlap' });
      const rotated = await service.rotateSecret(created.client_id);
      expect(await service.authenticate(created.client_id, created.client_secret)).toBeNull();
      expect(await service.authenticate(created.client_id, rotated.client_secret)).toMatchObject({ id: created.client_id });
    } finally {
      await strict.close();
    }
  });
});
