import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../setup/database.js';
import { freePort } from '../setup/free-port.js';
import { type ServiceProcess, spawnService, waitForStatus } from '../setup/processes.js';

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

/** What an operator sees when the service starts: one line that says it is ready, not the framework's chatter. */
describe('start-up output', () => {
  const running: { kill: (signal: NodeJS.Signals) => void }[] = [];
  afterEach(() => {
    for (const process of running.splice(0)) process.kill('SIGKILL');
  });

  async function startOnce(databaseUrl: string): Promise<string> {
    const port = await freePort();
    const service: ServiceProcess = spawnService({ DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1' });
    running.push(service.child);
    await waitForStatus(`http://127.0.0.1:${port}/health`, 200, 60_000);
    service.child.kill('SIGTERM');
    await service.exited;
    return service.output();
  }

  it('logs one ready line naming the address, the docs, the migrations it applied and a first step; framework lines only at debug', async () => {
    const databaseUrl = await createTestDatabase();
    const lines = (await startOnce(databaseUrl)).split('\n').filter(Boolean).map((line) => JSON.parse(line) as { level: string; msg: string; context?: string });
    const ready = lines.filter((line) => line.msg.startsWith('voyage-connect ready on '));
    expect(ready).toHaveLength(1);
    expect(ready[0].level).toBe('info');
    expect(ready[0].msg).toMatch(/^voyage-connect ready on http:\/\/127\.0\.0\.1:\d+ \(public http:\/\/localhost:\d+\); API docs at http:\/\/localhost:\d+\/docs; applied migrations InitialSchema1795237632385, .*DeviceCodes1795300000000, ClientDeletion1795310000000, UserDisabling1795320000000, NotificationRecipientCheck1795330000000, SigningKeyActivation1795340000000, RevocationModel1795345000000, ScopeDescriptions1795350000000\. First client: npm run cli -- client:create --name my-device$/);
    expect(lines.filter((line) => ['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory', 'NestApplication'].includes(line.context ?? ''))).toEqual([]);

    // The next start on the same database has nothing to migrate, and says so.
    const again = await startOnce(databaseUrl);
    expect(again).toContain('database schema up to date. First client:');
  }, 120_000);

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
