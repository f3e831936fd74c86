import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../setup/database.js';
import { freePort } from '../../setup/free-port.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = fileURLToPath(new URL('../../../dist/main.js', import.meta.url));

/** Terminal colour escapes, and the carriage returns a terminal puts before each newline. */
const plain = (output: string) => output.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replaceAll('\r', '');
/** A log line at a terminal starts with its time. */
const LOG_LINE = /^\[\d\d:\d\d:\d\d\.\d{3}\] [A-Z]+: /;

/** What a person sees at a terminal: script(1) gives the command a terminal of its own. */
describe('the log at a terminal', () => {
  const running: ChildProcess[] = [];
  afterEach(() => {
    for (const child of running.splice(0)) child.kill('SIGKILL');
  });

  function atTerminal(command: string, env: Record<string, string>): { child: ChildProcess; output: () => string } {
    const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    running.push(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    return { child, output: () => plain(output) };
  }

  it('writes each request, and each security event, as one line: method, path, status and time', async () => {
    const port = await freePort();
    const service = atTerminal(`${process.execPath} ${MAIN}`, { DATABASE_URL: await createTestDatabase(), PORT: String(port), HOST: '127.0.0.1' });
    await expect.poll(service.output, { timeout: 60_000, interval: 200 }).toContain('voyage-connect ready on');
    await (await fetch(`http://127.0.0.1:${port}/health`)).text();
    const refused = await fetch(`http://127.0.0.1:${port}/sso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=refresh_token&refresh_token=x&client_id=no-such-client&client_secret=s3cret-value',
    });
    expect(refused.status).toBe(401);
    await expect.poll(service.output, { timeout: 5_000, interval: 100 }).toContain('POST /sso/token 401');

    const lines = service.output().split('\n').filter(Boolean);
    expect(lines.filter((line) => !LOG_LINE.test(line)), 'every line is a log line of its own').toEqual([]);
    expect(lines).toContainEqual(expect.stringMatching(/^\[[\d:.]+\] INFO: GET \/health 200 \d+\.\d ms$/));
    expect(lines).toContainEqual(
      expect.stringMatching(/^\[[\d:.]+\] INFO: client\.refused \(unknown_client\): client authentication failed \{"clientId":"no-such-client","address":"127\.0\.0\.1"\}$/),
    );
    expect(service.output()).not.toContain('s3cret-value');
  }, 90_000);

  it('shows no progress spinner of npm among the lines of npm start', async () => {
    // A bad setting ends the service at once; npm used to draw its spinner over what it printed.
    const service = atTerminal('npm run start:prod', { PORT: '70000' });
    await new Promise((resolve) => service.child.once('exit', resolve));
    expect(service.output()).toContain('Invalid configuration: PORT must not be greater than 65535 (got "70000")');
    expect(service.output()).not.toMatch(/[\u2800-\u28ff]/);
  }, 60_000);
});
