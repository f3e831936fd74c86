import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';
import { runCli, type ServiceProcess, spawnService, waitForStatus } from '../../setup/processes.js';

const MAIN = fileURLToPath(new URL('../../../dist/main.js', import.meta.url));
const MIGRATIONS = readdirSync(new URL('../../../migrations/', import.meta.url)).filter((file) => file.endsWith('.ts')).length;

/** What an operator sees when the service starts: one line that says it is ready, not the framework's chatter. */
describe('start-up output', () => {
  const running: { kill: (signal: NodeJS.Signals) => void }[] = [];
  afterEach(() => {
    for (const process of running.splice(0)) process.kill('SIGKILL');
  });

  async function startOnce(databaseUrl: string, logLevel = 'info'): Promise<string> {
    const port = await freePort();
    const service: ServiceProcess = spawnService({ DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: logLevel });
    running.push(service.child);
    await waitForStatus(`http://127.0.0.1:${port}/health`, 200, 60_000);
    service.child.kill('SIGTERM');
    await service.exited;
    return service.output();
  }

  type Line = { level: string | number; msg: string; context?: string; migrations?: string[] };
  const parse = (output: string) => output.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Line);

  it('logs one ready line naming the address, the docs, how many migrations it applied and the first step; framework lines only at debug', async () => {
    const databaseUrl = await createTestDatabase();
    const lines = parse(await startOnce(databaseUrl));
    const ready = lines.filter((line) => line.msg.startsWith('voyage-connect ready on '));
    expect(ready).toHaveLength(1);
    expect(ready[0].level).toBe('info');
    expect(ready[0].msg).toMatch(
      new RegExp(`^voyage-connect ready on http://127\\.0\\.0\\.1:\\d+ \\(public http://localhost:\\d+\\); API docs at http://localhost:\\d+/docs; applied ${MIGRATIONS} migrations\\. First client: npm run cli -- client:create --name my-device$`),
    );
    expect(lines.filter((line) => ['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory', 'NestApplication'].includes(line.context ?? ''))).toEqual([]);
    expect(lines.filter((line) => line.msg.startsWith('Server listening at'))).toEqual([]);

    // The next start on the same database has nothing to migrate, and says so; while there is no
    // client yet it still says how to make the first one.
    expect(await startOnce(databaseUrl)).toContain('database schema up to date. First client:');
    const created = await runCli(['client:create', '--name', 'first'], { env: { DATABASE_URL: databaseUrl } });
    expect(created.code, created.stderr).toBe(0);
    const again = parse(await startOnce(databaseUrl)).filter((line) => line.msg.startsWith('voyage-connect ready on '));
    expect(again.map((line) => line.msg)).toEqual([expect.stringMatching(/; database schema up to date\.$/)]);
  }, 180_000);

  it('names the migrations it applied, and where Fastify listens, at debug', async () => {
    const lines = parse(await startOnce(await createTestDatabase(), 'debug'));
    const applied = lines.filter((line) => line.msg === 'applied migrations');
    expect(applied).toHaveLength(1);
    expect(applied[0].migrations).toHaveLength(MIGRATIONS);
    expect(applied[0].migrations).toEqual(expect.arrayContaining(['InitialSchema1795237632385', 'RevocationModel1795345000000']));
    expect(lines.filter((line) => line.msg.startsWith('Server listening at')).map((line) => line.level)).toEqual(['debug']);
  }, 90_000);

  it('writes readable lines instead of JSON at a terminal', async () => {
    const port = await freePort();
    // script(1) gives the service a terminal of its own.
    const child = spawn('script', ['-qfec', `${process.execPath} ${MAIN}`, '/dev/null'], {
      env: { ...process.env, DATABASE_URL: await createTestDatabase(), PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.push(child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    await expect.poll(() => output, { timeout: 60_000, interval: 200 }).toContain('voyage-connect ready on');
    const readyLine = output.split('\n').find((line) => line.includes('voyage-connect ready on'))!;
    expect(readyLine.trimStart().startsWith('{')).toBe(false);
    expect(readyLine).toMatch(/INFO/);
  }, 90_000);
});
