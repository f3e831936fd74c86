/**
 * Embedded PostgreSQL clusters the benchmarks set up themselves, with the service's own code
 * (dist/database/embedded-postgres.js), so the cluster is exactly the one the service would make:
 * one prepared with server settings before a service starts on it (scenario 8), and a bare one
 * for the NOTIFY probe.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Snapshot } from '../sysmon-types.js';
import { freePort, ROOT, SERVER_CPU } from './harness.js';
import { childrenOf } from './ws-common.js';

type EmbeddedModule = typeof import('../../src/database/embedded-postgres.js');
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;

/** The built module: the bench runs against dist/, like the service it measures. */
const embedded = async () => (await import(join(ROOT, 'dist/database/embedded-postgres.js'))) as EmbeddedModule;

/**
 * Server settings for scenario 8: pg_stat_statements must be loaded at server start
 * (shared_preload_libraries), which a running service's server cannot be given. Four instances
 * with 20 pooled connections and a listener each come close to the default 100 connections.
 */
export const FLEET_SERVER_SETTINGS: Record<string, string> = {
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track_utility': 'on',
  max_connections: '200',
};

/**
 * Creates the cluster under `dataDir` the way the service would, writes `settings` with ALTER
 * SYSTEM (postgresql.auto.conf) and stops it again: the service started on this DATA_DIR then
 * adopts the cluster, and its server starts with these settings.
 */
export async function prepareCluster(dataDir: string, settings: Record<string, string>): Promise<void> {
  const server = await (await embedded()).startEmbeddedPostgres({ dataDir, port: await freePort() });
  try {
    const db = new pg.Client({ connectionString: server.url() });
    await db.connect();
    try {
      for (const [name, value] of Object.entries(settings)) await db.query(`ALTER SYSTEM SET ${name} = ${db.escapeLiteral(value)}`);
    } finally {
      await db.end();
    }
  } finally {
    await server.stop();
  }
}

/**
 * A fresh cluster pinned to CPU 0 like the service's, for probes that need no service. It is
 * started from this (unpinned) process, so the postmaster and the children it has already forked
 * are pinned afterwards; backends forked later inherit the postmaster's pinning.
 */
export async function startBareDatabase(settings: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'voyage-connect-pg-'));
  const module = await embedded();
  if (Object.keys(settings).length) await prepareCluster(dataDir, settings);
  const server = await module.startEmbeddedPostgres({ dataDir, port: await freePort() });
  await module.ensureDatabase(server.url(), 'bench');
  const postmaster = Number(readFileSync(join(dataDir, 'postgres/postmaster.pid'), 'utf8').split('\n')[0]);
  pinTree(postmaster, SERVER_CPU);
  return {
    url: server.url('bench'),
    postmaster,
    databaseCpuPct: treeCpuPct(postmaster),
    stop: async () => {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** `taskset` for a process and its children (one level: the postmaster's are all direct). */
export function pinTree(root: number, cpu: string): void {
  for (const pid of [root, ...childrenOf(root)]) execFileSync('taskset', ['-a', '-p', '-c', cpu, String(pid)], { stdio: 'ignore' });
}

/** CPU (% of one core) a postmaster and its backends used between two sysmon snapshots. */
export function treeCpuPct(postmaster: number) {
  return (a: Snapshot, b: Snapshot) => {
    const ticks = (snap: Snapshot) => [...snap.procs.values()].filter((proc) => proc.pid === postmaster || proc.ppid === postmaster).reduce((sum, proc) => sum + proc.ticks, 0);
    return Math.round(((ticks(b) - ticks(a)) / CLK_TCK / ((b.t - a.t) / 1000)) * 1000) / 10;
  };
}
