/**
 * Pure statistics of the paired A/B benchmark (bench/ab-bench.ts): per round, B's figure over A's
 * from the same round (the two ran back to back, so a slow minute of the machine hits both); over the
 * rounds, the median ratio with its range, how many rounds B won, and a two-sided sign test of that
 * count. No I/O here.
 */

export type AbLabel = 'A' | 'B';

/** One measured run of one side (ops and CPU over its measured window). */
export interface AbRun {
  round: number;
  workload: string;
  side: AbLabel;
  opsPerSec: number;
  ops: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  /** Servers' CPU seconds (utime + stime) over the measured window; undefined when unreadable. */
  serverCpuSeconds?: number;
  /** Of serverCpuSeconds, the servers' main threads (their event loops: all JavaScript); undefined when unreadable. */
  eventLoopCpuSeconds?: number;
  /** Transactions: commit → applied on every replica, p99 of the run (bench/apply-lag.ts). */
  applyLagP99Ms?: number;
}

export interface RatioSpread {
  median: number;
  min: number;
  max: number;
  /** Rounds in which B did better (more ops/s; less CPU per op; lower latency). */
  bBetter: number;
  rounds: number;
  /** Two-sided sign test of bBetter among rounds (ties dropped): the chance of a split at least this lopsided if A and B were the same. */
  signP: number;
}

export interface AbRow {
  workload: string;
  rounds: number;
  a: SideMedians;
  b: SideMedians;
  /** B / A ops/s, per round. */
  opsRatio?: RatioSpread;
  /** B / A server CPU per operation, per round (below 1: B is cheaper). */
  cpuRatio?: RatioSpread;
  /** B / A event-loop (main-thread) CPU per operation, per round: whether a change moved JavaScript work or the rest. */
  loopCpuRatio?: RatioSpread;
  /** B / A p99 latency, per round. */
  p99Ratio?: RatioSpread;
  errors: { a: number; b: number };
}

export interface SideMedians {
  opsPerSec?: number;
  p50Ms?: number;
  p99Ms?: number;
  /** Server CPU ms per operation (median over rounds). */
  cpuMsPerOp?: number;
  /** Of it, the event loops' (median over rounds). */
  loopCpuMsPerOp?: number;
  applyLagP99Ms?: number;
}

export function median(xs: readonly number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((x, y) => x - y);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function binomial(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return c;
}

/** Two-sided sign test: P(a split at least as uneven as `wins` of `n`) under p = 1/2. 1 when n = 0. */
export function signTestP(wins: number, n: number): number {
  if (n === 0) return 1;
  const k = Math.max(wins, n - wins);
  let tail = 0;
  for (let i = k; i <= n; i++) tail += binomial(n, i);
  return Math.min(1, (2 * tail) / 2 ** n);
}

/**
 * Ratios B/A over paired rounds. `higherIsBetter`: ops/s (B wins above 1); otherwise costs and
 * latencies (B wins below 1). Pairs with a missing or zero A figure are left out.
 */
export function ratioSpread(pairs: ReadonlyArray<{ a: number | undefined; b: number | undefined }>, higherIsBetter: boolean): RatioSpread | undefined {
  const ratios = pairs.filter((p): p is { a: number; b: number } => p.a !== undefined && p.b !== undefined && p.a > 0 && Number.isFinite(p.b)).map((p) => p.b / p.a);
  if (ratios.length === 0) return undefined;
  const decided = ratios.filter((r) => r !== 1);
  const bBetter = decided.filter((r) => (higherIsBetter ? r > 1 : r < 1)).length;
  return { median: median(ratios)!, min: Math.min(...ratios), max: Math.max(...ratios), bBetter, rounds: ratios.length, signP: signTestP(bBetter, decided.length) };
}

const cpuMsPerOp = (r: AbRun): number | undefined => (r.serverCpuSeconds !== undefined && r.ops > 0 ? (r.serverCpuSeconds * 1000) / r.ops : undefined);
const loopCpuMsPerOp = (r: AbRun): number | undefined => (r.eventLoopCpuSeconds !== undefined && r.ops > 0 ? (r.eventLoopCpuSeconds * 1000) / r.ops : undefined);

function sideMedians(runs: readonly AbRun[]): SideMedians {
  const m = (f: (r: AbRun) => number | undefined): number | undefined => median(runs.map(f).filter((x): x is number => x !== undefined));
  const out: SideMedians = {};
  const set = (k: keyof SideMedians, v: number | undefined): void => {
    if (v !== undefined) out[k] = v;
  };
  set('opsPerSec', m((r) => r.opsPerSec));
  set('p50Ms', m((r) => r.p50Ms));
  set('p99Ms', m((r) => r.p99Ms));
  set('cpuMsPerOp', m(cpuMsPerOp));
  set('loopCpuMsPerOp', m(loopCpuMsPerOp));
  set('applyLagP99Ms', m((r) => r.applyLagP99Ms));
  return out;
}

/** One row per workload (in `workloads` order): each side's medians and the paired ratios. */
export function pairRuns(workloads: readonly string[], runs: readonly AbRun[]): AbRow[] {
  const rows: AbRow[] = [];
  for (const w of workloads) {
    const mine = runs.filter((r) => r.workload === w);
    if (mine.length === 0) continue;
    const rounds = [...new Set(mine.map((r) => r.round))].sort((x, y) => x - y);
    const pairs = rounds
      .map((round) => ({ a: mine.find((r) => r.round === round && r.side === 'A'), b: mine.find((r) => r.round === round && r.side === 'B') }))
      .filter((p): p is { a: AbRun; b: AbRun } => p.a !== undefined && p.b !== undefined);
    const row: AbRow = {
      workload: w,
      rounds: pairs.length,
      a: sideMedians(mine.filter((r) => r.side === 'A')),
      b: sideMedians(mine.filter((r) => r.side === 'B')),
      errors: { a: mine.filter((r) => r.side === 'A').reduce((s, r) => s + r.errors, 0), b: mine.filter((r) => r.side === 'B').reduce((s, r) => s + r.errors, 0) },
    };
    const ops = ratioSpread(pairs.map((p) => ({ a: p.a.opsPerSec, b: p.b.opsPerSec })), true);
    const cpu = ratioSpread(pairs.map((p) => ({ a: cpuMsPerOp(p.a), b: cpuMsPerOp(p.b) })), false);
    const loop = ratioSpread(pairs.map((p) => ({ a: loopCpuMsPerOp(p.a), b: loopCpuMsPerOp(p.b) })), false);
    const p99 = ratioSpread(pairs.map((p) => ({ a: p.a.p99Ms, b: p.b.p99Ms })), false);
    if (ops) row.opsRatio = ops;
    if (cpu) row.cpuRatio = cpu;
    if (loop) row.loopCpuRatio = loop;
    if (p99) row.p99Ratio = p99;
    rows.push(row);
  }
  return rows;
}

const f2 = (x: number | undefined): string => (x === undefined ? 'n/a' : x.toFixed(2));
const f0 = (x: number | undefined): string => (x === undefined ? 'n/a' : Math.round(x).toString());
const ratioText = (r: RatioSpread | undefined): string => (r === undefined ? 'n/a' : `${r.median.toFixed(3)} (${r.min.toFixed(3)}–${r.max.toFixed(3)})`);
const winsText = (r: RatioSpread | undefined): string => (r === undefined ? 'n/a' : `${r.bBetter} of ${r.rounds} (p ${r.signP < 0.001 ? '< 0.001' : r.signP.toFixed(3)})`);

/** The summary table and the per-round table, Markdown. */
export function renderAbMarkdown(rows: readonly AbRow[], runs: readonly AbRun[], header: string): string {
  const out = [header, ''];
  out.push('| workload | rounds | A ops/s | B ops/s | B/A ops/s, median (min–max) | B faster in | A CPU ms/op | B CPU ms/op | B/A CPU per op | B cheaper in | B/A event-loop CPU per op | A p99 ms | B p99 ms | B/A p99 | A apply lag p99 ms | B apply lag p99 ms | errors A / B |');
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    out.push(`| ${r.workload} | ${r.rounds} | ${f0(r.a.opsPerSec)} | ${f0(r.b.opsPerSec)} | ${ratioText(r.opsRatio)} | ${winsText(r.opsRatio)} | ${f2(r.a.cpuMsPerOp)} | ${f2(r.b.cpuMsPerOp)} | ${ratioText(r.cpuRatio)} | ${winsText(r.cpuRatio)} | ${ratioText(r.loopCpuRatio)} | ${f2(r.a.p99Ms)} | ${f2(r.b.p99Ms)} | ${ratioText(r.p99Ratio)} | ${f2(r.a.applyLagP99Ms)} | ${f2(r.b.applyLagP99Ms)} | ${r.errors.a} / ${r.errors.b} |`);
  }
  out.push('');
  out.push('Each round runs A and B back to back (A B in odd rounds, B A in even ones); a ratio is B\'s figure over A\'s of the same round, so a slow minute of the machine weighs on both. "B faster / cheaper in": rounds B won; p: two-sided sign test of that count (ties dropped), the chance of a split at least this uneven if A and B were the same. Medians of rounds; CPU = utime + stime of every server process over the measured window per completed operation; event-loop CPU = the part of it spent on the servers\' main threads (all their JavaScript), so a change that moves JavaScript work shows there and one that moves the thread pool or the kernel does not.');
  out.push('');
  out.push('| round | workload | A ops/s | B ops/s | B/A | A CPU ms/op | B CPU ms/op | B/A CPU |');
  out.push('|---:|---|---:|---:|---:|---:|---:|---:|');
  const rounds = [...new Set(runs.map((r) => r.round))].sort((x, y) => x - y);
  for (const round of rounds) {
    for (const w of [...new Set(runs.filter((r) => r.round === round).map((r) => r.workload))]) {
      const a = runs.find((r) => r.round === round && r.workload === w && r.side === 'A');
      const b = runs.find((r) => r.round === round && r.workload === w && r.side === 'B');
      const ca = a ? cpuMsPerOp(a) : undefined;
      const cb = b ? cpuMsPerOp(b) : undefined;
      out.push(`| ${round} | ${w} | ${f0(a?.opsPerSec)} | ${f0(b?.opsPerSec)} | ${a && b && a.opsPerSec > 0 ? (b.opsPerSec / a.opsPerSec).toFixed(3) : 'n/a'} | ${f2(ca)} | ${f2(cb)} | ${ca !== undefined && cb !== undefined && ca > 0 ? (cb / ca).toFixed(3) : 'n/a'} |`);
    }
  }
  return out.join('\n') + '\n';
}
