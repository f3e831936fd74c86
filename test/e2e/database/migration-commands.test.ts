import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, query } from '../../setup/database.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** `npm run <script>` in the project, as an operator types it (after `npm run build`), against `databaseUrl`. */
async function npmRun(script: string, databaseUrl: string): Promise<{ code: number | null; output: string }> {
  const child = spawn('npm', ['run', script], { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const [code] = await once(child, 'exit');
  return { code: code as number | null, output };
}

const tables = async (url: string) =>
  (await query<{ name: string }>(url, `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)).map((row) => row.name);

const hasFunction = async (url: string, name: string) => (await query(url, `SELECT 1 FROM pg_proc WHERE proname = $1`, [name])).length === 1;
/** The last migration adds the delivery's read function; the one before it, the publish functions. */
const hasLast = (url: string) => hasFunction(url, 'delivery_read_after');
const hasOneBeforeLast = (url: string) => hasFunction(url, 'publish_if_free');

describe('the migration commands of the README', () => {
  let url: string;
  beforeAll(async () => {
    url = await createTestDatabase();
  });

  it('npm run migration:run applies every migration to an empty database', async () => {
    const run = await npmRun('migration:run', url);
    expect(run.code, run.output).toBe(0);
    expect(await tables(url)).toEqual(expect.arrayContaining(['clients', 'grants', 'notifications', 'device_codes', 'migrations']));
  }, 60_000);

  it('npm run migration:revert undoes the last one only, and migration:run applies it again', async () => {
    const revert = await npmRun('migration:revert', url);
    expect(revert.code, revert.output).toBe(0);
    expect(await hasLast(url)).toBe(false);
    expect(await hasOneBeforeLast(url)).toBe(true);
    expect(await tables(url)).toEqual(expect.arrayContaining(['clients', 'portal_users', 'device_codes']));
    const again = await npmRun('migration:run', url);
    expect(again.code, again.output).toBe(0);
    expect(await hasLast(url)).toBe(true);
  }, 60_000);
});
