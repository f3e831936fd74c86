// Types of ../shared/anchors/sysmon.mjs, the anchors' quiet-machine check.
export interface Snapshot {
  t: number;
  procs: Map<number, { pid: number; comm: string; ppid: number; ticks: number }>;
}
export interface Foreign {
  foreign_cpu_pct_of_core: number;
  foreign_top: string;
}
export function snapshot(): Snapshot;
export function foreignCpu(a: Snapshot, b: Snapshot, root?: number): Foreign;
export function waitQuiet(options?: { maxPct?: number; maxWaitS?: number; root?: number }): Promise<Foreign & { waited_s: number }>;
