/**
 * A satellite-like link on this machine, between a subscriber and the service: the subscriber
 * runs in a network namespace of its own (`exec`), joined to the root namespace by a veth pair
 * with link-local addresses (169.254.X.Y/30) that exist only on this machine — the namespace has
 * no other route and nothing forwards, so nothing leaves the machine. Across the pair:
 *
 * - with `sch_netem` (tried first): `netem delay … loss … rate …` on both ends, the real thing;
 * - without it (this machine's kernel: "Specified qdisc kind is unknown"): `tbf` on both ends for
 *   the rate, and the delay and loss done by bench/lib/latency-relay.ts, which says what that
 *   approximates and what it does not.
 *
 * Either way the subscriber reaches the service at `host:port` (a relay in the root namespace;
 * it also lets `cut()` drop connections). The defaults are a geostationary hop: 600 ms one way,
 * 1 % loss, 512 kbit/s each direction. Needs root (namespaces and qdiscs). Every namespace this
 * module makes is named `vcsat-<pid>-<id>`: `close()` removes it, an exit of the process removes
 * it, and the next link removes those whose process is gone (a crash, a kill).
 */
import { type ChildProcess, execFile, execFileSync, spawn, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { startLatencyRelay } from './latency-relay.js';
import { isProcessAlive } from '../../src/database/process-alive.js';

export interface SatelliteLinkOptions {
  /** The service's port, on `upstreamHost` (default 127.0.0.1) in the root namespace. */
  upstreamPort: number;
  upstreamHost?: string;
  /** One-way delay in each direction (default 600). */
  delayMs?: number;
  /** Packet loss in each direction, in % (default 1). */
  lossPercent?: number;
  /** Rate in each direction (default 512). */
  rateKbit?: number;
  /**
   * What one loss costs where the relay emulates it: a retransmission timeout, which Linux sets
   * at the smoothed round trip plus at least 200 ms (default 2 × delayMs + 200).
   */
  lossStallMs?: number;
  /** Seed of the relay's loss draws (default 1). */
  seed?: number;
  /** `relay` uses the relay even where netem exists, to compare the two (default `auto`). */
  emulation?: 'auto' | 'relay';
}

export interface CutOptions {
  /**
   * `drop` (default): every connection across the link is lost, as when a modem restarts or a
   * gateway forgets its state — the service sees it close at once, the subscriber learns it only
   * when it next sends (and gets a reset) or its own liveness check fires. `keep`: connections
   * are left to TCP, which retransmits until the link is back.
   */
  connections?: 'drop' | 'keep';
}

export interface SatelliteLink {
  /** Where the subscriber reaches the service from inside the namespace. */
  host: string;
  port: number;
  namespace: string;
  /** `netem` where the kernel has it, else `relay` (tbf + the latency relay). */
  emulation: 'netem' | 'relay';
  /** Losses the relay emulated so far (0 under netem, whose losses the kernel keeps to itself). */
  lossesEmulated(): number;
  /** Runs `command` inside the namespace (the process's own pid; `close()` kills what is left). */
  exec(command: string, args?: string[], options?: SpawnOptions): ChildProcess;
  /** The link carries nothing for `ms` (both directions); resolves when it is back. */
  cut(ms: number, options?: CutOptions): Promise<void>;
  close(): Promise<void>;
}

const NAMESPACE = /^vcsat-(\d+)-([0-9a-f]{6})$/;
const run = promisify(execFile);

export async function openSatelliteLink(options: SatelliteLinkOptions): Promise<SatelliteLink> {
  if (process.getuid?.() !== 0) throw new Error('the satellite link needs root: it makes a network namespace and sets qdiscs');
  const delayMs = options.delayMs ?? 600;
  const lossPercent = options.lossPercent ?? 1;
  const rateKbit = options.rateKbit ?? 512;
  removeStaleLinks();

  const id = randomBytes(3).toString('hex');
  const namespace = `vcsat-${process.pid}-${id}`;
  const hostSide = `vcs${id}h`;
  const shipSide = `vcs${id}s`;
  const { host, ship } = freeSubnet();
  const children = new Set<ChildProcess>();
  // Synchronous, so that it also runs from an exit handler; the pair goes with the namespace.
  const remove = () => {
    killInside(namespace);
    ipQuiet(['netns', 'del', namespace]);
    ipQuiet(['link', 'del', hostSide]);
  };
  process.once('exit', remove);

  try {
    ip(['netns', 'add', namespace]);
    ip(['link', 'add', hostSide, 'type', 'veth', 'peer', 'name', shipSide, 'netns', namespace]);
    ip(['addr', 'add', `${host}/30`, 'dev', hostSide]);
    ip(['link', 'set', hostSide, 'up']);
    ip(['-n', namespace, 'addr', 'add', `${ship}/30`, 'dev', shipSide]);
    ip(['-n', namespace, 'link', 'set', shipSide, 'up']);
    ip(['-n', namespace, 'link', 'set', 'lo', 'up']);
  } catch (error) {
    remove();
    process.removeListener('exit', remove);
    throw error;
  }

  const netem = ['netem', 'delay', `${delayMs}ms`, 'loss', `${lossPercent}%`, 'rate', `${rateKbit}kbit`];
  // tbf: a burst of two full frames (a smooth rate) and up to 500 ms queued, as a modem's buffer.
  const tbf = ['tbf', 'rate', `${rateKbit}kbit`, 'burst', '3028', 'latency', '500ms'];
  const shape = (qdisc: string[]) => [
    ['qdisc', 'replace', 'dev', hostSide, 'root', ...qdisc],
    ['-n', namespace, 'qdisc', 'replace', 'dev', shipSide, 'root', ...qdisc],
  ];
  const emulation = options.emulation !== 'relay' && tryTc(shape(netem)) ? 'netem' : 'relay';
  const shaping = shape(emulation === 'netem' ? netem : tbf);
  if (emulation === 'relay') shaping.forEach((args) => tc(args));

  const relay = await startLatencyRelay({
    listenHost: host,
    upstreamHost: options.upstreamHost ?? '127.0.0.1',
    upstreamPort: options.upstreamPort,
    // Under netem the kernel does it all, and the relay only forwards.
    delayMs: emulation === 'relay' ? delayMs : 0,
    lossPercent: emulation === 'relay' ? lossPercent : 0,
    lossStallMs: options.lossStallMs ?? 2 * delayMs + 200,
    seed: options.seed ?? 1,
  }).catch((error: Error) => {
    remove();
    process.removeListener('exit', remove);
    throw error;
  });

  return {
    host,
    port: relay.port,
    namespace,
    emulation,
    lossesEmulated: () => relay.losses(),
    exec(command, args = [], spawnOptions = {}) {
      const child = spawn('ip', ['netns', 'exec', namespace, command, ...args], spawnOptions);
      children.add(child);
      child.once('exit', () => children.delete(child));
      return child;
    },
    async cut(ms, cutOptions = {}) {
      // The blackhole qdisc drops every packet silently: no route changes, nothing leaks elsewhere.
      await Promise.all(shape(['blackhole']).map((args) => run('tc', args)));
      // The resets toward the subscriber fall into the blackhole, as they would on a dead hop.
      if ((cutOptions.connections ?? 'drop') === 'drop') relay.dropAll();
      await new Promise((resolve) => setTimeout(resolve, ms));
      await Promise.all(shaping.map((args) => run('tc', args)));
    },
    async close() {
      const exits = [...children].map((child) => new Promise((resolve) => child.once('exit', resolve)));
      killInside(namespace); // the children and whatever they started
      await Promise.all(exits);
      await relay.close();
      remove();
      process.removeListener('exit', remove);
    },
  };
}

/**
 * Removes the namespaces (and any pair left in the root namespace) of links whose process is
 * gone, killing what still runs inside them.
 */
export function removeStaleLinks(): void {
  const live = new Set<string>();
  for (const line of execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n')) {
    const name = line.split(' ')[0];
    const match = NAMESPACE.exec(name);
    if (!match) continue;
    if (isProcessAlive(Number(match[1]))) {
      live.add(match[2]);
      continue;
    }
    killInside(name);
    ipQuiet(['netns', 'del', name]);
  }
  for (const match of execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).matchAll(/^\d+: (vcs([0-9a-f]{6})h)@/gm)) {
    if (!live.has(match[2])) ipQuiet(['link', 'del', match[1]]);
  }
}

/** Kills every process inside `namespace`. */
function killInside(namespace: string): void {
  let pids: string[];
  try {
    pids = execFileSync('ip', ['netns', 'pids', namespace], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n').filter(Boolean);
  } catch {
    return; // no such namespace
  }
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** A /30 in 169.254.100.0–169.254.199.255 that no interface of this machine uses. */
function freeSubnet(): { host: string; ship: string } {
  const used = execFileSync('ip', ['-4', '-o', 'addr', 'show'], { encoding: 'utf8' });
  for (let attempt = 0; attempt < 100; attempt++) {
    const third = 100 + Math.floor(Math.random() * 100);
    const base = 4 * Math.floor(Math.random() * 64);
    const inSubnet = [0, 1, 2, 3].some((offset) => used.includes(` 169.254.${third}.${base + offset}/`));
    if (!inSubnet) return { host: `169.254.${third}.${base + 1}`, ship: `169.254.${third}.${base + 2}` };
  }
  throw new Error('no free link-local /30 for the satellite link');
}

function ip(args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function ipQuiet(args: string[]): void {
  try {
    ip(args);
  } catch {
    // already gone
  }
}

function tc(args: string[]): void {
  execFileSync('tc', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Whether every command of `commands` succeeds (netem is missing where its module is). */
function tryTc(commands: string[][]): boolean {
  try {
    commands.forEach((args) => tc(args));
    return true;
  } catch {
    return false;
  }
}

