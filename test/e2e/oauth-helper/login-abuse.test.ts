import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createUser, type TestClient } from '../../factories/oauth.factory.js';
import { issueState } from '../../factories/state.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { query } from '../../setup/database.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

type Outcome = 'signed in' | 'wrong' | 'throttled' | 'busy' | 'other';

/** What the login page answered, as a user reads it. */
async function outcomeOf(response: Response): Promise<Outcome> {
  const html = await response.text();
  if (response.status === 200 && html.includes('Return to your device')) return 'signed in';
  if (response.status === 200 && html.includes('Wrong username or password.')) return 'wrong';
  if (response.status === 429 && html.includes('Too many failed attempts.')) return 'throttled';
  if (response.status === 503 && html.includes('Too many sign-ins at once.')) return 'busy';
  return 'other';
}

// Behind a trusted proxy, so each request can come from an address of the test's choosing.
describe('the login slow-down cannot be turned against a user', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ TRUST_PROXY: 'true', PASSWORD_CHECK_CONCURRENCY: '16' });
    client = await createClient(app);
  });
  afterAll(() => app.close());

  const attempt = async (user: { username: string; password: string }, address: string) =>
    outcomeOf(await signIn((await issueState(app, client.id)).authorize_url, user, { 'x-forwarded-for': address }));

  it("lets the owner sign in from their own address while a stranger's wrong passwords slow down only the stranger", async () => {
    const owner = await createUser(app);
    for (let i = 0; i < 5; i++) expect(await attempt({ ...owner, password: 'guessed wrong' }, '203.0.113.7')).toBe('wrong');
    expect(await attempt({ ...owner, password: 'guessed wrong' }, '203.0.113.7')).toBe('throttled');
    expect(await attempt(owner, '203.0.113.7')).toBe('throttled');
    expect(await attempt(owner, '198.51.100.20')).toBe('signed in');
  });

  it('still slows a username down for everyone once guesses from many addresses pass its ceiling', async () => {
    const owner = await createUser(app);
    for (let i = 1; i <= 50; i++) expect(await attempt({ ...owner, password: 'guessed wrong' }, `192.0.2.${i}`)).toBe('wrong');
    expect(await attempt({ ...owner, password: 'guessed wrong' }, '192.0.2.200')).toBe('throttled');
    expect(await attempt(owner, '198.51.100.21')).toBe('throttled');
  });

  it('counts IPv6 addresses by their /64', async () => {
    const owner = await createUser(app);
    for (let i = 1; i <= 5; i++) expect(await attempt({ ...owner, password: 'guessed wrong' }, `2001:db8:aa:bb::${i}`)).toBe('wrong');
    expect(await attempt({ ...owner, password: 'guessed wrong' }, '2001:db8:aa:bb:ffff::9')).toBe('throttled');
    expect(await attempt(owner, '2001:db8:aa:bc::1')).toBe('signed in');
  });

  it('answers a slowed-down attempt at once, without waiting for locks other sign-ins hold', async () => {
    const owner = await createUser(app);
    for (let i = 0; i < 5; i++) expect(await attempt({ ...owner, password: 'guessed wrong' }, '203.0.113.8')).toBe('wrong');
    // Another session holds every counter row and the advisory locks a throttle could take for this user.
    const blocker = new pg.Client({ connectionString: app.databaseUrl });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT * FROM login_failures FOR UPDATE');
      await blocker.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`user:${owner.username.toLowerCase()}`]);
      await blocker.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', ['address:203.0.113.8']);
      const started = Date.now();
      expect(await attempt(owner, '203.0.113.8')).toBe('throttled');
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
  });

  it('treats a 3,000-character random username as a wrong one, and stores a fixed-size key for long ones', async () => {
    const long = randomBytes(1_500).toString('hex');
    expect(await attempt({ username: long, password: 'whatever password' }, '203.0.113.9')).toBe('wrong');
    const withinRules = 'u'.repeat(128);
    expect(await attempt({ username: withinRules, password: 'whatever password' }, '203.0.113.9')).toBe('wrong');
    const keys = await query<{ length: number }>(app.databaseUrl, 'SELECT max(length(key)) AS length FROM login_failures');
    expect(keys[0].length).toBeLessThanOrEqual(140);
  });

  it('answers a username with a NUL character with the 400 error page, not a 500', async () => {
    const response = await signIn((await issueState(app, client.id)).authorize_url, { username: 'a\u0000b', password: 'whatever password' });
    expect(response.status).toBe(400);
  });
});

describe('password checks under a flood', () => {
  let app: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    app = await startTestApp({ TRUST_PROXY: 'true', PASSWORD_CHECK_CONCURRENCY: '1' });
    client = await createClient(app);
  });
  afterAll(() => app.close());

  it('answers 503 with Retry-After at once when every password-check slot is taken, and counts no failure for it', async () => {
    const users = await Promise.all(Array.from({ length: 8 }, () => createUser(app)));
    const urls = await Promise.all(users.map(async () => (await issueState(app, client.id)).authorize_url));
    const before = (await query<{ count: string }>(app.databaseUrl, 'SELECT count(*) FROM login_failures'))[0].count;
    const responses = await Promise.all(
      users.map((user, index) => signIn(urls[index], { ...user, password: 'guessed wrong' }, { 'x-forwarded-for': `192.0.2.${index + 1}` })),
    );
    const busy = responses.filter((response) => response.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    for (const response of busy) expect(response.headers.get('retry-after')).toBe('1');
    const outcomes = await Promise.all(responses.map(outcomeOf));
    expect(outcomes.every((outcome) => outcome === 'wrong' || outcome === 'busy')).toBe(true);
    // Each checked attempt counts on three keys (pair, user, address); a busy answer on none.
    const after = (await query<{ count: string }>(app.databaseUrl, 'SELECT count(*) FROM login_failures'))[0].count;
    expect(Number(after) - Number(before)).toBe(3 * outcomes.filter((outcome) => outcome === 'wrong').length);
    // The flood over, the same users sign in.
    for (const [index, user] of users.entries()) expect(await outcomeOf(await signIn(urls[index], user))).not.toBe('busy');
  });
});
