import { readFile } from 'node:fs/promises';
import { freePort } from '../setup/free-port.js';
import { type ServiceProcess, spawnService, waitForStatus } from '../setup/processes.js';

/** One running copy of the built service (`node dist/main.js`), restartable on its port. */
export interface Instance {
  name: string;
  baseUrl: string;
  /** False between a kill/SIGTERM and the next healthy start. */
  readonly up: boolean;
  readonly process: ServiceProcess | undefined;
  /** Starts the process and waits for /health 200. */
  start(): Promise<void>;
  /** Sends `signal` and waits for the exit (SIGKILL after `timeoutMs`); resolves the exit code. */
  stop(signal: 'SIGKILL' | 'SIGTERM', timeoutMs?: number): Promise<number | null>;
  /** Resident memory of the process in KiB (VmRSS), or undefined when not running. */
  rssKiB(): Promise<number | undefined>;
  /** CPU time (user + system) the process has used so far, in seconds, or undefined when not running. */
  cpuSeconds(): Promise<number | undefined>;
  /** Everything the current (or last) process wrote. */
  output(): string;
}

const STARTUP_TIMEOUT_MS = 60_000;
/** Linux's USER_HZ, the unit of /proc/<pid>/stat times (100 on every common platform). */
const CLOCK_TICKS_PER_S = 100;

/**
 * `count` instances on one database, all answering for the first one's public address, so a token
 * one of them issues is accepted by the others (same issuer and audience), like behind a load
 * balancer. Started one after another: the first runs the migrations.
 */
export async function startInstances(databaseUrl: string, count: number, extraEnv: Record<string, string> = {}): Promise<Instance[]> {
  const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
  const publicUrl = `http://127.0.0.1:${ports[0]}`;
  const instances = ports.map((port, index) =>
    createInstance(String.fromCharCode(65 + index), port, {
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      API_URL: publicUrl,
      IDENTITY_URL: publicUrl,
      FRONTEND_URL: publicUrl,
      LOG_LEVEL: 'warn',
      LOG_REQUESTS: 'false',
      ...extraEnv,
    }),
  );
  for (const instance of instances) await instance.start();
  return instances;
}

function createInstance(name: string, port: number, env: Record<string, string>): Instance {
  const baseUrl = `http://127.0.0.1:${port}`;
  let current: ServiceProcess | undefined;
  let up = false;
  const instance: Instance = {
    name,
    baseUrl,
    get up() {
      return up;
    },
    get process() {
      return current;
    },
    async start() {
      if (current && current.child.exitCode === null && current.child.signalCode === null) throw new Error(`instance ${name} is already running`);
      current = spawnService({ ...env, PORT: String(port) });
      const started = current;
      const exitedEarly = started.exited.then((code) => {
        throw new Error(`instance ${name} exited with ${code} while starting:\n${started.output().slice(-2000)}`);
      });
      await Promise.race([waitForStatus(`${baseUrl}/health`, 200, STARTUP_TIMEOUT_MS), exitedEarly]);
      exitedEarly.catch(() => {}); // it may exit later, when the test stops it
      up = true;
    },
    async stop(signal, timeoutMs = 20_000) {
      if (!current) return null;
      up = false;
      const stopping = current;
      if (stopping.child.exitCode !== null || stopping.child.signalCode !== null) return stopping.child.exitCode;
      stopping.child.kill(signal);
      const timer = setTimeout(() => stopping.child.kill('SIGKILL'), timeoutMs);
      try {
        return await stopping.exited;
      } finally {
        clearTimeout(timer);
      }
    },
    async rssKiB() {
      const pid = current?.child.pid;
      if (pid === undefined || current?.child.exitCode !== null) return undefined;
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
      return match ? Number(match[1]) : undefined;
    },
    async cpuSeconds() {
      const pid = current?.child.pid;
      if (pid === undefined || current?.child.exitCode !== null) return undefined;
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return fields.length > 12 ? (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S : undefined;
    },
    output: () => current?.output() ?? '',
  };
  return instance;
}
