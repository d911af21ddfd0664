/**
 * CPU per pgbench transaction for `bench --vs postgres` (issue 54 asks for the SQL layer's CPU per
 * statement beside the tablet work; docs/benchmarks.md). Read from /proc before and after each run:
 *  - tessera: each tserver's CPU (every thread). pgbench talks to node 0, whose process runs the SQL
 *    layer (parsing, planning, executing, the client library) and its third of the tablet leaders;
 *    the other tservers do tablet work only. Leaders are spread evenly, so the SQL layer's share is
 *    estimated as node 0's CPU minus the mean of the others' (what docs/sql.md's table measured).
 *  - PostgreSQL: the postmaster and every live descendant, plus the CPU of the children it has
 *    already reaped (cutime/cstime: pgbench's backends exit when the run ends).
 * Elsewhere (no /proc) every figure is undefined and the report says n/a.
 */
import * as fs from 'node:fs';
import { USER_HZ } from '../common/proc-threads';
import { cpuSeconds } from './proc-stats';

/** Fields after the command name of a /proc/PID/stat line (rest[0] is field 3, the state). */
function statFields(pid: number): string[] | undefined {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Every pid's parent, from /proc (empty without /proc). */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return out;
  }
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    const f = statFields(Number(n));
    if (f) out.set(Number(n), Number(f[1]));
  }
  return out;
}

/**
 * CPU seconds of a process tree: the root and its live descendants (utime+stime), and the root's
 * reaped children (cutime+cstime). Undefined when the root cannot be read.
 */
export function treeCpuSeconds(root: number | undefined): number | undefined {
  if (!root) return undefined;
  const f = statFields(root);
  if (!f) return undefined;
  let ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  const ppid = parents();
  const inTree = new Set([root]);
  // Parents may have larger pids than their children (pid reuse): repeat until nothing is added.
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, parent] of ppid) {
      if (inTree.has(pid) || !inTree.has(parent)) continue;
      inTree.add(pid);
      grew = true;
      const c = statFields(pid);
      if (c) ticks += Number(c[11]) + Number(c[12]);
    }
  }
  return Number.isFinite(ticks) ? ticks / USER_HZ : undefined;
}

/** Live children of `pid` (empty without /proc). */
export function childCount(pid: number | undefined): number {
  if (!pid) return 0;
  let n = 0;
  for (const parent of parents().values()) if (parent === pid) n++;
  return n;
}

/**
 * After a pgbench run: wait until the postmaster has no more children than `before` (pgbench's
 * backends have exited and been reaped, so their CPU is in its cutime), at most `maxMs`. Read before
 * that, a backend that exits between the scan of live processes and the read of cutime is in
 * neither (a c1 run once read 1 µs a transaction).
 */
export async function settleChildren(pid: number | undefined, before: number, maxMs = 5000): Promise<void> {
  const end = Date.now() + maxMs;
  while (pid && childCount(pid) > before && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

/** A reading of every process a run measures. */
export interface CpuReading {
  /** Per tserver (node 0 first: the SQL endpoint), seconds of all its threads. */
  tservers: Array<number | undefined>;
  postgres: number | undefined;
}

export function readCpu(tserverPids: ReadonlyArray<number | undefined>, postgresPid: number | undefined): CpuReading {
  return { tservers: tserverPids.map((p) => cpuSeconds(p)), postgres: treeCpuSeconds(postgresPid) };
}

/** CPU µs per transaction of one run. */
export interface RunCpu {
  /** All tservers together. */
  tesseraUs?: number;
  /** Node 0: the SQL layer and its share of the tablets. */
  endpointUs?: number;
  /** The mean of the other tservers: tablet work only. */
  tabletNodeUs?: number;
  /** Node 0 minus the mean of the others. */
  sqlLayerUs?: number;
  postgresUs?: number;
}

/** Per-transaction CPU of the system that ran between two readings (tessera's figures or PostgreSQL's). */
export function runCpu(system: 'tessera' | 'postgres', before: CpuReading, after: CpuReading, transactions: number): RunCpu {
  if (!(transactions > 0)) return {};
  const us = (s: number): number => (s * 1e6) / transactions;
  if (system === 'postgres') {
    return before.postgres !== undefined && after.postgres !== undefined ? { postgresUs: us(after.postgres - before.postgres) } : {};
  }
  const d = after.tservers.map((a, i) => (a !== undefined && before.tservers[i] !== undefined ? a - before.tservers[i]! : undefined));
  if (d.length < 2 || d.some((x) => x === undefined)) return {};
  const secs = d as number[];
  const others = secs.slice(1).reduce((a, x) => a + x, 0) / (secs.length - 1);
  return { tesseraUs: us(secs.reduce((a, x) => a + x, 0)), endpointUs: us(secs[0]!), tabletNodeUs: us(others), sqlLayerUs: us(secs[0]! - others) };
}
