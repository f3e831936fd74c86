/**
 * Where a V8 CPU profile (`BENCH_CPU_PROF=<dir>`, or `node --cpu-prof`) spent its busy time:
 * self time by package and by function, inclusive time by function, and optionally which call
 * paths lead to one function (`--callers writev`: the pg socket's writes, a WebSocket's, …).
 * Idle time is left out, so the shares are of the time the process worked.
 *
 *   npx tsx bench/profile-summary.ts <file.cpuprofile> [--top 30] [--callers <function name>] [--depth 8]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '30' }, callers: { type: 'string' }, depth: { type: 'string', default: '8' } },
});
if (positionals.length !== 1) throw new Error('usage: profile-summary.ts <file.cpuprofile> [--top N] [--callers <function>] [--depth N]');
const profile = JSON.parse(readFileSync(positionals[0], 'utf8')) as Profile;
const top = Number(opt.top);

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

const selfTime = new Map<number, number>();
profile.samples.forEach((id, index) => selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));

/** A function as a person finds it: name, and file under its package or dist/. */
const where = ({ callFrame }: ProfileNode) =>
  `${callFrame.functionName || '(anonymous)'} ${callFrame.url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, 'dist/')}:${callFrame.lineNumber}`;
/** Its package: an npm package, a file of ours under dist/, a node: module, or V8's own entries. */
const packageOf = ({ callFrame }: ProfileNode) => {
  const { url, functionName } = callFrame;
  if (!url) return functionName;
  const inPackage = url.match(/node_modules\/((@[^/]+\/)?[^/]+)/);
  if (inPackage) return inPackage[1];
  if (url.includes('/dist/')) return `ours: ${url.replace(/.*\/dist\//, '').split('/').slice(0, 2).join('/')}`;
  return url;
};

const self = new Map<string, number>();
const packages = new Map<string, number>();
const inclusive = new Map<string, number>();
const callers = new Map<string, number>();
let busy = 0;
const add = (map: Map<string, number>, key: string, time: number) => map.set(key, (map.get(key) ?? 0) + time);
for (const [id, time] of selfTime) {
  const node = byId.get(id)!;
  if (node.callFrame.functionName === '(idle)') continue;
  busy += time;
  add(self, where(node), time);
  add(packages, packageOf(node), time);
  const seen = new Set<string>();
  for (let current: number | undefined = id; current !== undefined; current = parentOf.get(current)) {
    const name = where(byId.get(current)!);
    if (!seen.has(name)) add(inclusive, name, time);
    seen.add(name);
  }
  if (opt.callers && node.callFrame.functionName === opt.callers) {
    const path: string[] = [];
    for (let current = parentOf.get(id); current !== undefined && path.length < Number(opt.depth); current = parentOf.get(current)) path.push(where(byId.get(current)!));
    add(callers, path.join(' < '), time);
  }
}

const print = (title: string, map: Map<string, number>, count = top) => {
  console.log(`\n## ${title} (% of ${(busy / 1000).toFixed(0)} ms busy)`);
  for (const [name, time] of [...map].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${((100 * time) / busy).toFixed(1).padStart(5)} %  ${name}`);
};
print('self time by package', packages, Math.min(top, 25));
print('self time by function', self);
print('inclusive time by function', inclusive);
if (opt.callers) print(`paths to ${opt.callers}`, callers, 12);
