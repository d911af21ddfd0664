/**
 * Pure aggregation and rendering of the side-by-side benchmark: runs (one per round × workload ×
 * system) in, one row per workload out (median of rounds with min and max, ratio tessera/etcd per
 * round), then a Markdown table. No I/O here, so it can be checked without any cluster.
 */
import type { ThreadCpuSamples } from './profiling';
import { THREAD_KINDS, type ThreadKind } from './proc-stats';
import { ACTIVITY_EVERY_MS, analyzeSeconds, meanSyncMs, WAL_SLOW_SYNC_MS, type ActivitySample } from './activity';
import type { ApplyLagFigures } from './apply-lag';
import { costPerOp, sortCostKeys, type LoopDelay } from './io-costs';
import type { VsSystem } from './vs-loadgen';

export interface VsRun {
  round: number;
  workload: string;
  system: VsSystem;
  ops: number;
  errors: number;
  firstError?: string;
  seconds: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Transactions: the commit() call alone. */
  commitP50Ms?: number;
  commitP99Ms?: number;
  /** Transactions: the measured window's commits by path (single-tablet fast path or distributed) and the warm-up's. */
  commitPaths?: CommitPaths;
  /** Transactions: commit → intents applied on every replica (bench/apply-lag.ts). */
  applyLag?: ApplyLagFigures;
  serverCpuSeconds?: number;
  /** Of serverCpuSeconds, the kernel's part (system calls, page faults, interrupts). */
  serverSystemCpuSeconds?: number;
  /** The servers' thread wake-ups over the measured window (voluntary context switches). */
  serverWakeups?: number;
  /** CPU seconds of each server process over the measured window (names: master, ts0, … / etcd0, …). */
  serverCpuByProcess?: Array<{ name: string; seconds: number }>;
  /** The servers' CPU seconds by kind of thread (main: event loops; rocksdb: RocksDB's background; other: libuv pool, V8 workers). */
  serverCpuByThread?: Record<ThreadKind, number>;
  clientCpuSeconds?: number;
  /** Cores that other processes of the machine kept busy over the measured window (not this system's servers nor its load generator). */
  otherCores?: number;
  clientPeakRssBytes?: number;
  /** Change of the servers' work counters over the measured window (bench/io-costs.ts; tessera only). */
  counters?: Record<string, number>;
  /** The worst tserver's event-loop delay over the measured window (bench/io-costs.ts; tessera only). */
  loopDelay?: LoopDelay;
  /** Operations completed in each whole second of the measured window (dips show maintenance work, stalls). */
  perSecond?: number[];
  /** CLOCK_MONOTONIC (µs) where perSecond's first second begins (lines it up with the servers' CPU profiles). */
  measureStartMonoMicros?: number;
  /** The tservers' main-thread CPU time read from /proc while the window ran (`--profile all`). */
  mainThreadCpu?: ThreadCpuSamples;
  /** Their spread, ops/s (at least 2 whole seconds). */
  perSecondSpread?: Spread;
  /** A long window's background activity, sampled every few seconds while it ran (bench/activity.ts). */
  activity?: { samples: ActivitySample[]; failures: number };
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

/** Commits of a transaction workload by path, in the measured window and in the warm-up (bench/vs-loadgen.ts). */
export interface CommitPaths {
  singleTablet: number;
  distributed: number;
  warmupSingleTablet: number;
  warmupDistributed: number;
}

export interface SystemFigures {
  rounds: number;
  opsPerSec: Spread;
  p50Ms: Spread;
  p99Ms: Spread;
  commitP50Ms?: Spread;
  commitP99Ms?: Spread;
  /** Cores other processes kept busy while the windows ran (median of rounds). */
  otherCores?: Spread;
  /** Summed over the rounds. */
  commitPaths?: CommitPaths;
  applyLag?: ApplyLagSpread;
  errors: number;
  firstError?: string;
  /** CPU seconds per 1,000 ops over all rounds (sum of CPU / sum of ops). */
  serverCpuSecPer1kOps?: number;
  clientCpuSecPer1kOps?: number;
  /** Share of the servers' CPU spent in the kernel, over all rounds (sum of system / sum of CPU). */
  serverKernelShare?: number;
  /** The servers' thread wake-ups per operation, over all rounds (sum / sum of ops). */
  serverWakeupsPerOp?: number;
  /** Each server process's CPU seconds per second measured, over all rounds (cores it kept busy). */
  serverCoresByProcess?: Array<{ name: string; cores: number }>;
  /** The servers' CPU ms per operation by kind of thread, over all rounds. */
  serverCpuMsPerOpByThread?: Record<ThreadKind, number>;
  /**
   * CPU cores kept busy while the workload ran, servers and load generators together (CPU seconds /
   * wall seconds, per round): near the machine's core count, the run was CPU-bound.
   */
  coresBusy?: Spread;
  /** Work counters per completed operation, over all rounds (sum of changes / sum of ops). */
  costPerOp?: Record<string, number>;
  /** The worst server's event-loop delay in each round's measured window, across rounds. */
  loopDelayP99Ms?: Spread;
  loopDelayMaxMs?: Spread;
}

/** Apply lag over rounds: medians of the rounds' percentiles, the largest lag, summed counts. */
export interface ApplyLagSpread {
  p50Ms?: Spread;
  p99Ms?: Spread;
  maxMs?: number;
  /** Commit → applied on the first replica (see ApplyLagFigures.firstP50Ms). */
  firstP50Ms?: Spread;
  firstP99Ms?: Spread;
  /** The lag's stages (see LagStages), medians of the rounds that had them. */
  stages?: Record<StageKey, Spread> & { txns: number };
  complete: number;
  incomplete: number;
}

const STAGE_KEYS = ['commitRoundP50Ms', 'commitRoundP99Ms', 'toFirstP50Ms', 'toFirstP99Ms', 'spreadP50Ms', 'spreadP99Ms', 'otherTabletP50Ms', 'otherTabletP99Ms', 'followersP50Ms', 'followersP99Ms'] as const;
type StageKey = (typeof STAGE_KEYS)[number];

export interface VsRow {
  workload: string;
  tessera?: SystemFigures;
  /** Absent when etcd was skipped or the workload is tessera-only. */
  etcd?: SystemFigures;
  /** ops/s tessera/etcd, paired by round. */
  ratio?: Spread;
  /**
   * A transaction workload (txnN-cC): its tessera ops/s over put-cC's of the same round (the windows
   * next to each other in time, so load from other processes of the machine mostly cancels).
   */
  perPut?: Spread;
  note?: string;
}

/** txnN-cC's ops/s over put-cC's, paired by round (tessera); undefined without such pairs. */
function perPutRatios(w: string, runs: readonly VsRun[]): Spread | undefined {
  const m = /^txn\d+-c(\d+)$/.exec(w);
  if (!m) return undefined;
  const puts = runs.filter((r) => r.workload === `put-c${m[1]}` && r.system === 'tessera');
  const out: number[] = [];
  for (const t of runs.filter((r) => r.workload === w && r.system === 'tessera')) {
    const p = puts.find((x) => x.round === t.round);
    if (p && p.opsPerSec > 0) out.push(t.opsPerSec / p.opsPerSec);
  }
  return out.length ? spread(out) : undefined;
}

/** The spread of a run's 1-second rates; undefined with fewer than 2 whole seconds. */
export function perSecondSpread(perSecond: readonly number[] | undefined): Spread | undefined {
  return perSecond !== undefined && perSecond.length >= 2 ? spread(perSecond) : undefined;
}

export function spread(xs: readonly number[]): Spread {
  if (xs.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
  return { median, min: s[0] ?? Number.NaN, max: s[s.length - 1] ?? Number.NaN };
}

function per1k(runs: readonly VsRun[], pick: (r: VsRun) => number | undefined): number | undefined {
  let cpu = 0;
  let ops = 0;
  for (const r of runs) {
    const c = pick(r);
    if (c === undefined) return undefined;
    cpu += c;
    ops += r.ops;
  }
  return ops > 0 ? (cpu / ops) * 1000 : undefined;
}

const defined = (xs: ReadonlyArray<number | undefined>): number[] => xs.filter((x): x is number => x !== undefined && !Number.isNaN(x));

function stageSpread(lags: readonly ApplyLagFigures[]): Pick<ApplyLagSpread, 'stages'> {
  const withStages = lags.map((l) => l.stages).filter((x): x is NonNullable<ApplyLagFigures['stages']> => x !== undefined);
  if (withStages.length === 0) return {};
  const stages = { txns: withStages.reduce((a, x) => a + x.txns, 0) } as Record<StageKey, Spread> & { txns: number };
  for (const k of STAGE_KEYS) stages[k] = spread(withStages.map((x) => x[k]));
  return { stages };
}

function applyLagSpread(runs: readonly VsRun[]): ApplyLagSpread | undefined {
  const lags = runs.map((r) => r.applyLag).filter((l): l is ApplyLagFigures => l !== undefined);
  if (lags.length === 0) return undefined;
  const p50 = defined(lags.map((l) => l.p50Ms));
  const p99 = defined(lags.map((l) => l.p99Ms));
  const max = defined(lags.map((l) => l.maxMs));
  const firstP50 = defined(lags.map((l) => l.firstP50Ms));
  const firstP99 = defined(lags.map((l) => l.firstP99Ms));
  return {
    ...(p50.length ? { p50Ms: spread(p50) } : {}),
    ...(p99.length ? { p99Ms: spread(p99) } : {}),
    ...(max.length ? { maxMs: Math.max(...max) } : {}),
    ...(firstP50.length ? { firstP50Ms: spread(firstP50) } : {}),
    ...(firstP99.length ? { firstP99Ms: spread(firstP99) } : {}),
    ...stageSpread(lags),
    complete: lags.reduce((a, l) => a + l.complete, 0),
    incomplete: lags.reduce((a, l) => a + l.incomplete, 0),
  };
}

/** Cores each server process kept busy over all rounds; undefined unless every run has the same processes. */
function coresByProcess(runs: readonly VsRun[]): Array<{ name: string; cores: number }> | undefined {
  const first = runs[0]?.serverCpuByProcess;
  if (!first || first.length === 0) return undefined;
  const names = first.map((p) => p.name);
  if (!runs.every((r) => r.serverCpuByProcess?.length === names.length && r.serverCpuByProcess.every((p, i) => p.name === names[i]))) return undefined;
  const seconds = runs.reduce((a, r) => a + r.seconds, 0);
  if (!(seconds > 0)) return undefined;
  return names.map((name, i) => ({ name, cores: runs.reduce((a, r) => a + r.serverCpuByProcess![i]!.seconds, 0) / seconds }));
}

function figures(runs: readonly VsRun[]): SystemFigures | undefined {
  if (runs.length === 0) return undefined;
  const commitP50 = defined(runs.map((r) => r.commitP50Ms));
  const commitP99 = defined(runs.map((r) => r.commitP99Ms));
  const applyLag = applyLagSpread(runs);
  const paths = runs.filter((r) => r.commitPaths).map((r) => r.commitPaths!);
  const commitPaths = paths.length ? paths.reduce((a, p) => ({ singleTablet: a.singleTablet + p.singleTablet, distributed: a.distributed + p.distributed, warmupSingleTablet: a.warmupSingleTablet + p.warmupSingleTablet, warmupDistributed: a.warmupDistributed + p.warmupDistributed })) : undefined;
  const firstError = runs.find((r) => r.firstError)?.firstError;
  const other = defined(runs.map((r) => r.otherCores));
  const serverCpu = per1k(runs, (r) => r.serverCpuSeconds);
  const clientCpu = per1k(runs, (r) => r.clientCpuSeconds);
  const cost = costPerOp(runs);
  const kernelPer1k = per1k(runs, (r) => r.serverSystemCpuSeconds);
  const wakeupsPer1k = per1k(runs, (r) => r.serverWakeups);
  const byProcess = coresByProcess(runs);
  const byThread: Partial<Record<ThreadKind, number>> = {};
  for (const k of THREAD_KINDS) {
    const v = per1k(runs, (r) => r.serverCpuByThread?.[k]);
    if (v !== undefined) byThread[k] = v;
  }
  const loopP99 = defined(runs.map((r) => r.loopDelay?.p99Ms));
  const loopMax = defined(runs.map((r) => r.loopDelay?.maxMs));
  const cores = defined(runs.map((r) => (r.serverCpuSeconds !== undefined && r.clientCpuSeconds !== undefined && r.seconds > 0 ? (r.serverCpuSeconds + r.clientCpuSeconds) / r.seconds : undefined)));
  return {
    rounds: runs.length,
    opsPerSec: spread(runs.map((r) => r.opsPerSec)),
    p50Ms: spread(runs.map((r) => r.p50Ms)),
    p99Ms: spread(runs.map((r) => r.p99Ms)),
    ...(commitP50.length ? { commitP50Ms: spread(commitP50) } : {}),
    ...(commitP99.length ? { commitP99Ms: spread(commitP99) } : {}),
    ...(commitPaths ? { commitPaths } : {}),
    ...(other.length ? { otherCores: spread(other) } : {}),
    ...(applyLag ? { applyLag } : {}),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    ...(firstError !== undefined ? { firstError } : {}),
    ...(serverCpu !== undefined ? { serverCpuSecPer1kOps: serverCpu } : {}),
    ...(clientCpu !== undefined ? { clientCpuSecPer1kOps: clientCpu } : {}),
    ...(kernelPer1k !== undefined && serverCpu !== undefined && serverCpu > 0 ? { serverKernelShare: kernelPer1k / serverCpu } : {}),
    ...(wakeupsPer1k !== undefined ? { serverWakeupsPerOp: wakeupsPer1k / 1000 } : {}),
    ...(byProcess ? { serverCoresByProcess: byProcess } : {}),
    ...(Object.keys(byThread).length === THREAD_KINDS.length ? { serverCpuMsPerOpByThread: byThread as Record<ThreadKind, number> } : {}),
    ...(cores.length === runs.length ? { coresBusy: spread(cores) } : {}),
    ...(cost ? { costPerOp: cost } : {}),
    ...(loopP99.length ? { loopDelayP99Ms: spread(loopP99) } : {}),
    ...(loopMax.length ? { loopDelayMaxMs: spread(loopMax) } : {}),
  };
}

export function aggregate(workloads: readonly string[], runs: readonly VsRun[], notes: ReadonlyMap<string, string> = new Map()): VsRow[] {
  return workloads.map((w) => {
    const of = (s: VsSystem): VsRun[] => runs.filter((r) => r.workload === w && r.system === s);
    const t = of('tessera');
    const e = of('etcd');
    const ratios: number[] = [];
    for (const tr of t) {
      const er = e.find((x) => x.round === tr.round);
      if (er && er.opsPerSec > 0) ratios.push(tr.opsPerSec / er.opsPerSec);
    }
    const tf = figures(t);
    const ef = figures(e);
    const note = notes.get(w);
    const perPut = perPutRatios(w, runs);
    return {
      workload: w,
      ...(tf ? { tessera: tf } : {}),
      ...(ef ? { etcd: ef } : {}),
      ...(ratios.length ? { ratio: spread(ratios) } : {}),
      ...(perPut ? { perPut } : {}),
      ...(note !== undefined ? { note } : {}),
    };
  });
}

function commitPathsCell(p: CommitPaths | undefined): string {
  if (!p) return 'n/a';
  const n = (x: number): string => x.toLocaleString('en-US');
  return `${n(p.singleTablet)} / ${n(p.distributed)} (${n(p.warmupSingleTablet)} / ${n(p.warmupDistributed)})`;
}

const f0 = (x: number | undefined): string => (x === undefined || Number.isNaN(x) ? 'n/a' : Math.round(x).toLocaleString('en-US'));
const f2 = (x: number | undefined): string => (x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(2));
const f3 = (x: number | undefined): string => (x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(3));

export interface PeakRss {
  system: VsSystem;
  serversMaxBytes?: number;
  serversSumBytes?: number;
  clientsMaxBytes?: number;
}

export function renderMarkdown(rows: readonly VsRow[], rss: readonly PeakRss[], header: string): string {
  const lines = [
    header,
    '',
    '| workload | tessera ops/s | p50 ms | p99 ms | etcd ops/s | p50 ms | p99 ms | ratio t/e median (min–max) | server CPU s/1k ops t / e | client CPU s/1k ops t / e | cores busy t / e | errors t / e | other processes\' cores t / e |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const t = r.tessera;
    const e = r.etcd;
    const ratio = r.ratio ? `${f2(r.ratio.median)} (${f2(r.ratio.min)}–${f2(r.ratio.max)})` : 'n/a';
    lines.push(
      `| ${r.workload} | ${f0(t?.opsPerSec.median)} | ${f2(t?.p50Ms.median)} | ${f2(t?.p99Ms.median)} | ${f0(e?.opsPerSec.median)} | ${f2(e?.p50Ms.median)} | ${f2(e?.p99Ms.median)} | ${ratio} | ${f3(t?.serverCpuSecPer1kOps)} / ${f3(e?.serverCpuSecPer1kOps)} | ${f3(t?.clientCpuSecPer1kOps)} / ${f3(e?.clientCpuSecPer1kOps)} | ${f2(t?.coresBusy?.median)} / ${f2(e?.coresBusy?.median)} | ${t?.errors ?? 'n/a'} / ${e?.errors ?? 'n/a'} | ${f2(t?.otherCores?.median)} / ${f2(e?.otherCores?.median)} |`,
    );
  }
  const mib = (b: number | undefined): string => (b === undefined ? 'n/a' : `${(b / (1024 * 1024)).toFixed(0)} MiB`);
  lines.push('', '| system | peak RSS, largest server | peak RSS, all servers | peak RSS, largest load generator |', '|---|---:|---:|---:|');
  for (const p of rss) lines.push(`| ${p.system} | ${mib(p.serversMaxBytes)} | ${mib(p.serversSumBytes)} | ${mib(p.clientsMaxBytes)} |`);
  const txnRows = rows.filter((r) => r.tessera?.commitP50Ms || r.tessera?.applyLag);
  if (txnRows.length) {
    lines.push(
      '',
      '| transactions (tessera) | txn/s | txn p50 ms | txn p99 ms | commit() p50 ms | commit() p99 ms | apply lag p50 ms | apply lag p99 ms | apply lag max ms | first replica applied p50 / p99 ms | txns complete / incomplete | commits single-tablet / distributed (warm-up) | txn/s ÷ put/s at the same concurrency, paired by round: median (min–max) |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const r of txnRows) {
      const t = r.tessera;
      const l = t?.applyLag;
      lines.push(
        `| ${r.workload} | ${f0(t?.opsPerSec.median)} | ${f2(t?.p50Ms.median)} | ${f2(t?.p99Ms.median)} | ${f2(t?.commitP50Ms?.median)} | ${f2(t?.commitP99Ms?.median)} | ${f2(l?.p50Ms?.median)} | ${f2(l?.p99Ms?.median)} | ${f2(l?.maxMs)} | ${f2(l?.firstP50Ms?.median)} / ${f2(l?.firstP99Ms?.median)} | ${l ? `${l.complete} / ${l.incomplete}` : 'n/a'} | ${commitPathsCell(t?.commitPaths)} | ${r.perPut ? `${f2(r.perPut.median)} (${f2(r.perPut.min)}–${f2(r.perPut.max)})` : 'n/a'} |`,
      );
    }
    lines.push('', 'Apply lag: transaction commit (commit hybrid time) → intents applied on every replica of every participant tablet, from each tserver\'s /api/v1/txn-applies; only transactions committed in the measured window and reported by all 3 replicas of each of their (≥ 2) tablets count as complete. First replica applied: commit → the quickest participant replica applied (the status tablet → participant leader → APPLY Raft round path); the rest of the lag is the spread to the last replica.');
    const staged = txnRows.filter((r) => r.tessera?.applyLag?.stages);
    if (staged.length) {
      lines.push(
        '',
        '| apply lag by stage (tessera) | commit round p50 / p99 ms | commit point → first replica applied p50 / p99 ms | first → last replica applied p50 / p99 ms | of which: other tablet later p50 / p99 ms | of which: followers behind p50 / p99 ms | txns |',
        '|---|---:|---:|---:|---:|---:|---:|',
      );
      for (const r of staged) {
        const g = r.tessera?.applyLag?.stages;
        if (!g) continue;
        lines.push(`| ${r.workload} | ${f2(g.commitRoundP50Ms.median)} / ${f2(g.commitRoundP99Ms.median)} | ${f2(g.toFirstP50Ms.median)} / ${f2(g.toFirstP99Ms.median)} | ${f2(g.spreadP50Ms.median)} / ${f2(g.spreadP99Ms.median)} | ${f2(g.otherTabletP50Ms.median)} / ${f2(g.otherTabletP99Ms.median)} | ${f2(g.followersP50Ms.median)} / ${f2(g.followersP99Ms.median)} | ${g.txns} |`);
      }
      lines.push(
        '',
        'Stages of each complete transaction\'s apply lag (percentiles per stage, so they do not add up): commit round = commit hybrid time → its COMMITTED record applied on the first status-tablet replica (the commit point, when commit() can answer: the status tablet\'s Raft round); commit point → first replica applied = the status leader telling the participant leaders to apply and their APPLY entry\'s Raft round; first → last = the other participant tablet\'s APPLY round ending later, and the followers learning the commit index and applying (every participant tablet, all 3 replicas); taken apart: other tablet later = the later tablet\'s quickest replica after the earlier tablet\'s quickest, followers behind = the most any tablet\'s last replica applied after its own quickest (the commit index reaching the followers, and their apply stage).',
      );
    }
  }
  lines.push(...renderServerTime(rows));
  lines.push(...renderCpuByThread(rows));
  lines.push(...renderCosts(rows));
  const notes = rows.filter((r) => r.note).map((r) => `- ${r.workload}: ${r.note ?? ''}`);
  const errs = rows.flatMap((r) => [r.tessera?.firstError ? `- ${r.workload} tessera first error: ${r.tessera.firstError}` : '', r.etcd?.firstError ? `- ${r.workload} etcd first error: ${r.etcd.firstError}` : ''].filter(Boolean));
  if (notes.length || errs.length) lines.push('', ...notes, ...errs);
  return lines.join('\n') + '\n';
}

/**
 * Long windows only (they carry activity samples): each window's slowest seconds and what completed
 * around them — RocksDB flushes and compactions (with their CPU) and elections — and the median rate
 * of the seconds near a memtable flush against the rest.
 */
export function renderSlowSeconds(runs: readonly VsRun[]): string[] {
  const lines: string[] = [];
  for (const r of runs) {
    if (r.system !== 'tessera' || !r.perSecond || !r.activity) continue;
    const a = analyzeSeconds(r.perSecond, r.activity.samples);
    if (!a) continue;
    if (lines.length === 0) {
      lines.push(
        `| slowest seconds of long windows (tessera) | second | ops | of the median | RocksDB flushes / compactions around it | their CPU ms | Raft log fdatasyncs ≥ ${WAL_SLOW_SYNC_MS} ms / their mean ms around it | elections |`,
        '|---|---:|---:|---:|---:|---:|---:|---:|',
      );
    }
    const rel = (x: number): string => (a.medianOps > 0 ? `${((x / a.medianOps) * 100).toFixed(0)} %` : 'n/a');
    for (const s of a.slowest) lines.push(`| ${r.workload} round ${r.round} | ${s.second} | ${s.ops} | ${rel(s.ops)} | ${s.flushes} / ${s.compactions} | ${s.backgroundCpuMs.toFixed(0)} | ${s.walSlowSyncs} / ${meanSyncMs(s).toFixed(1)} | ${s.elections} |`);
    // A group without seconds has no median: a dash, not a 0 that reads as a stall.
    const med = (g: { seconds: number; medianOps: number }): string => (g.seconds > 0 ? String(g.medianOps) : '–');
    const relOf = (g: { seconds: number; medianOps: number }): string => (g.seconds > 0 ? rel(g.medianOps) : '–');
    lines.push(
      `| ${r.workload} round ${r.round}: seconds near a memtable flush / the rest | ${a.nearFlush.seconds} / ${a.noFlush.seconds} | median ${med(a.nearFlush)} / ${med(a.noFlush)} | ${relOf(a.nearFlush)} / ${relOf(a.noFlush)} | | | | |`,
      `| ${r.workload} round ${r.round}: seconds near a fdatasync ≥ ${WAL_SLOW_SYNC_MS} ms / the rest | ${a.nearSlowSync.seconds} / ${a.noSlowSync.seconds} | median ${med(a.nearSlowSync)} / ${med(a.noSlowSync)} | ${relOf(a.nearSlowSync)} / ${relOf(a.noSlowSync)} | | | whole window: ${a.walSlowSyncs} / ${a.walSyncMeanMs.toFixed(1)} | |`,
    );
  }
  if (lines.length === 0) return [];
  return [
    ...lines,
    '',
    `Per-second counts from the load generator; "around it": what completed, summed over every replica of the cluster, in the ${ACTIVITY_EVERY_MS / 1000} s intervals between the samples of each tserver's /api/v1/tablets that overlap the second (RocksDB's own statistics; the Raft logs' fdatasyncs, each timed from the call to its completion seen by the event loop; elections: tablet terms raised). All 3 replicas of a tablet fill their memtables at the same pace, so they tend to flush in the same second; a flush's CPU runs on RocksDB's threads, beside the servers' event loops, and its SST writes share the disk with the Raft logs: a fdatasync of ${WAL_SLOW_SYNC_MS} ms or more is a disk stall that every write of its tablet waits for.`,
  ];
}

const pct = (x: number | undefined): string => (x === undefined || Number.isNaN(x) ? 'n/a' : `${(x * 100).toFixed(0)} %`);

/**
 * Table: where the servers' CPU goes, per workload and system — CPU per operation, the kernel's share
 * of it, and thread wake-ups per operation. On a machine whose cores the servers share, each wake-up
 * (a message to a sleeping peer, a hand-off to a thread pool, a disk flush) costs kernel time beyond
 * the work itself, so these two columns say how much of the cost is coordination rather than work.
 */
export function renderServerTime(rows: readonly VsRow[]): string[] {
  const has = (f: SystemFigures | undefined): boolean => f?.serverKernelShare !== undefined || f?.serverWakeupsPerOp !== undefined;
  const shown = rows.filter((r) => has(r.tessera) || has(r.etcd));
  if (shown.length === 0) return [];
  const ms = (f: SystemFigures | undefined): string => f3(f?.serverCpuSecPer1kOps);
  const wk = (f: SystemFigures | undefined): string => (f?.serverWakeupsPerOp === undefined ? 'n/a' : f.serverWakeupsPerOp.toFixed(1));
  const byProc = (f: SystemFigures | undefined): string => (f?.serverCoresByProcess ? f.serverCoresByProcess.map((p) => `${p.name} ${p.cores.toFixed(2)}`).join(' · ') : 'n/a');
  const loop = (f: SystemFigures | undefined): string => (f?.loopDelayP99Ms && f.loopDelayMaxMs ? `${f.loopDelayP99Ms.median.toFixed(1)} / ${f.loopDelayMaxMs.median.toFixed(1)}` : 'n/a');
  return [
    '',
    '| servers, per operation | tessera CPU ms | kernel share | thread wake-ups | cores busy by process | event-loop delay p99 / max ms | etcd CPU ms | kernel share | thread wake-ups | cores busy by process |',
    '|---|---:|---:|---:|---|---:|---:|---:|---:|---|',
    ...shown.map((r) => `| ${r.workload} | ${ms(r.tessera)} | ${pct(r.tessera?.serverKernelShare)} | ${wk(r.tessera)} | ${byProc(r.tessera)} | ${loop(r.tessera)} | ${ms(r.etcd)} | ${pct(r.etcd?.serverKernelShare)} | ${wk(r.etcd)} | ${byProc(r.etcd)} |`),
    '',
    "CPU: utime and stime of every server process (/proc/PID/stat) over the measured windows, all rounds, per completed operation (CPU s per 1,000 ops = CPU ms per op); kernel share: stime's part. Cores busy by process: each server's CPU seconds per second measured (master, ts0… / etcd0…), to see whether one server is the bottleneck. Thread wake-ups: voluntary context switches of the servers' threads (/proc/PID/task/*/status), a thread that slept — on a socket, a lock, a thread pool's queue, a disk flush — and was woken; each costs scheduler and, across cores, interrupt time beyond the work. Event-loop delay: how late the worst tserver's event loop ran a timer set every 100 ms (prom-client's nodejs_eventloop_lag_* gauges, read at the end of each measured window; the read at its start reset them), p99 and max, median of rounds — a turn of the loop that long is what every message, Raft round and reply of that server waits behind.",
  ];
}

/**
 * Table: tessera's server CPU per operation by kind of thread — the event loops (all JavaScript),
 * RocksDB's background threads, and the rest (libuv's pool, which runs every RocksDB write and WAL
 * fdatasync, and V8's workers). It says how much of the cost a faster event loop could touch at all.
 */
export function renderCpuByThread(rows: readonly VsRow[]): string[] {
  const shown = rows.filter((r) => r.tessera?.serverCpuMsPerOpByThread);
  if (shown.length === 0) return [];
  const cell = (t: Record<ThreadKind, number>, k: ThreadKind): string => {
    const all = t.main + t.rocksdb + t.other;
    return `${f3(t[k])} (${all > 0 ? ((t[k] / all) * 100).toFixed(0) : '0'} %)`;
  };
  return [
    '',
    '| tessera server CPU ms per operation, by thread | event loops (main threads: JavaScript) | RocksDB background threads (flushes, compactions) | other threads (libuv pool: RocksDB writes, WAL fdatasyncs; V8: GC, compiler) |',
    '|---|---:|---:|---:|',
    ...shown.map((r) => {
      const t = r.tessera!.serverCpuMsPerOpByThread!;
      return `| ${r.workload} | ${cell(t, 'main')} | ${cell(t, 'rocksdb')} | ${cell(t, 'other')} |`;
    }),
    '',
    "Every thread of every tserver and the master (/proc/PID/task/TID/stat, utime+stime, at each measured window's start and end; a thread is its process's main thread, a `rocksdb:*` thread, or another: Node names neither libuv's pool threads nor V8's workers). The three add up to the CPU column of the table above, less threads that exited during a window.",
  ];
}

/** Table: each counter per completed operation (rows) for each tessera workload (columns). */
export function renderCosts(rows: readonly VsRow[]): string[] {
  const cols = rows.filter((r) => r.tessera?.costPerOp);
  if (cols.length === 0) return [];
  const keys = sortCostKeys([...new Set(cols.flatMap((r) => Object.keys(r.tessera!.costPerOp!)))]);
  // Below 0.01 two significant digits, so a rare event (a memtable flush every few thousand operations) does not read as none.
  const fmt = (x: number | undefined): string => (x === undefined ? '–' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x === 0 || x >= 0.01 ? x.toFixed(2) : x.toPrecision(2));
  return [
    '',
    `| tessera, whole cluster, per completed operation | ${cols.map((r) => r.workload).join(' | ')} |`,
    `|---|${cols.map(() => '---:').join('|')}|`,
    ...keys.map((k) => `| ${k} | ${cols.map((r) => fmt(r.tessera!.costPerOp![k])).join(' | ')} |`),
    '',
    'Counted on every tserver (/prometheus-metrics: tserver_rpc_ops_total, tserver_raft_messages, tserver_raft_batches, tserver_log_fsyncs, tserver_raft_early, tserver_raft_apply, tserver_docdb_write_batches, tserver_docdb_write_ops, tserver_rocksdb_background, nodejs_gc_duration_seconds) at the start and end of each measured window; the change over all rounds divided by the operations completed. A put is one row; a transaction is the whole 2-row transaction. Counts move far less with the machine\'s speed than ops/s (batching still follows the load). GC pauses are the main threads\' stops for garbage collection (minor: the young generation, following what the code allocates per operation; major and incremental: the old generation); V8\'s concurrent marking on other threads is not in them. "RocksDB …": what each database\'s RocksDB did on its own background threads (memtable flushes to SST files and compactions: how many, and their CPU ms; write stall ms: writes RocksDB held back waiting for them), from RocksDB\'s statistics — work no V8 profile shows, and part of the server CPU above. "While a log sync ran": Raft work a replica did during an fsync of newer entries instead of after it (committed entries applied, and how many ms sooner in all, at least; leader sends). "Raft apply stage": committed entries applied on every replica, in how many state-machine calls, the ms those entries waited for their call and the ms the calls ran (summed over replicas; divided by entries or calls, the stage\'s average latency).',
  ];
}
