/**
 * One load-generator run of the side-by-side benchmarks (vs-etcd.ts, ab-bench.ts): the child process
 * (bench/vs-loadgen.ts) and what is sampled at its measure-start and measure-end marks — server and
 * client CPU, work counters, apply lag and activity of long windows — and the run's row of the report.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import * as readline from 'node:readline';
import * as hdr from 'hdr-histogram-js';
import { ActivitySampler, type ActivitySample } from './activity';
import { ApplyLagCollector, COLLECT_WINDOW_MIN_SECONDS, type ApplyLagAccumulator, type ApplyLagFigures } from './apply-lag';
import { MainThreadCpuSampler, type ThreadCpuSamples } from './profiling';
import { counterDelta, type LoopDelay, type TserverScrape } from './io-costs';
import { cpuSeconds, cpuSplitSum, machineBusySeconds, threadCpuDelta, threadCpuTable, threadWakeupsSum, type CpuSplit, type ThreadKind } from './proc-stats';
import type { LoadResult, LoadSpec, VsSystem } from './vs-loadgen';
import { perSecondSpread, type VsRun } from './vs-report';

/** A load generator that outlives its duration by this much is killed and the run counts as failed. */
const LOADGEN_GRACE_MS = 60_000;

export interface Target {
  system: VsSystem;
  serverPids: () => Array<number | undefined>;
  /** A short name per server process, in serverPids' order (the per-process CPU column). */
  serverNames: () => string[];
  spec: Partial<LoadSpec>;
  /** The servers' work counters (tessera: bench/io-costs.ts), read at measure-start and measure-end. */
  counters?: () => Promise<TserverScrape>;
  /** The load generator to run (default: this build's bench/vs-loadgen.js). */
  loadgenScript?: string;
  /** The tservers' consoles, read during a long window for its apply lag and background activity (tessera). */
  applyLagConsoles?: () => readonly string[];
  /** Servers whose main threads' CPU time to read from /proc while a window runs (`--profile all`). */
  mainThreads?: () => { names: string[]; pids: Array<number | undefined> };
}

export function log(line: string): void {
  process.stdout.write(line + '\n');
}

/** Run one load generator child; samples server and client CPU at its measure-start / measure-end marks. */
export interface LoadgenRun {
  result: LoadResult;
  serverCpu?: number;
  /** Of serverCpu, the seconds spent in the kernel (system calls, page faults, interrupts). */
  serverSystemCpu?: number;
  /** Thread wake-ups of the servers (voluntary context switches, proc-stats.threadWakeups). */
  serverWakeups?: number;
  /** CPU seconds of each server process over the measured window. */
  serverCpuByProcess?: Array<{ name: string; seconds: number }>;
  /** The servers' CPU seconds over the measured window by kind of thread (proc-stats.ThreadKind). */
  serverCpuByThread?: Record<ThreadKind, number>;
  clientCpu?: number;
  /** CPU seconds the whole machine was busy over the measured window (/proc/stat), every process's. */
  machineCpu?: number;
  /** Wall clock (µs since the epoch) when the load generator said measure-start / measure-end. */
  measureStartMicros?: number;
  measureEndMicros?: number;
  /** CLOCK_MONOTONIC (µs) at the load generator's measure-start: where its perSecond counts begin. */
  measureStartMonoMicros?: number;
  /** Change of the target's work counters over the measured window. */
  counters?: Record<string, number>;
  /** The worst server event-loop delay over the measured window (tessera). */
  loopDelay?: LoopDelay;
  /** A transaction window's applies gathered while it ran (Target.applyLagConsoles). */
  applies?: { acc: ApplyLagAccumulator; sinceMicros: number; reads: number; lastError?: string };
  /** A long window's background activity, sampled while it ran (bench/activity.ts). */
  activity?: { samples: ActivitySample[]; failures: number };
  /** The main threads' CPU time while the window ran (Target.mainThreads). */
  mainThreadCpu?: ThreadCpuSamples;
}

/**
 * What runLoadgen samples at a window's measure-start and measure-end marks. The counters' read is
 * started at the mark and awaited after the run (a failed read only loses the cost table's column).
 */
interface Mark {
  micros: number;
  cpu: CpuSplit | undefined;
  wakeups: number | undefined;
  perProcess: Array<number | undefined>;
  /** CPU seconds of every server thread (by kind). */
  threads: ReturnType<typeof threadCpuTable>;
  client: number | undefined;
  machine: number | undefined;
  counters: Promise<TserverScrape | undefined> | undefined;
}

export async function runLoadgen(target: Target, spec: LoadSpec): Promise<LoadgenRun> {
  const child = spawn(process.execPath, [target.loadgenScript ?? path.join(__dirname, 'vs-loadgen.js'), JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    if (stderr.length < 4000) stderr += c.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), (spec.warmupSeconds + spec.seconds) * 1000 + LOADGEN_GRACE_MS);
  let result: LoadResult | undefined;
  let m0: Mark | undefined;
  let m1: Mark | undefined;
  const readCounters = (): Promise<TserverScrape | undefined> | undefined =>
    target.counters?.().catch((e: unknown) => {
      log(`${target.system}: reading the servers' counters failed (${e instanceof Error ? e.message : String(e)}); no cost per operation for this run`);
      return undefined;
    });
  const mark = (): Mark => {
    const pids = target.serverPids();
    return { micros: Date.now() * 1000, cpu: cpuSplitSum(pids), wakeups: threadWakeupsSum(pids), perProcess: pids.map(cpuSeconds), threads: threadCpuTable(pids), client: cpuSeconds(child.pid), machine: machineBusySeconds(), counters: readCounters() };
  };
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let collector: ApplyLagCollector | undefined;
  let collected: Awaited<ReturnType<ApplyLagCollector['stop']>> | undefined;
  let sampler: ActivitySampler | undefined;
  let activityDone: ReturnType<ActivitySampler['stop']> | undefined;
  let activity: Awaited<ReturnType<ActivitySampler['stop']>> | undefined;
  let startMono: number | undefined;
  let threads: MainThreadCpuSampler | undefined;
  let threadCpu: Promise<ThreadCpuSamples> | undefined;
  try {
    for await (const line of readline.createInterface({ input: child.stdout })) {
      let ev: { event?: string };
      try {
        ev = JSON.parse(line) as { event?: string };
      } catch {
        continue;
      }
      if (ev.event === 'measure-start') {
        m0 = mark();
        const mono = (ev as { monoMicros?: unknown }).monoMicros;
        if (typeof mono === 'number') startMono = mono;
        const mt = target.mainThreads?.();
        if (mt) (threads = new MainThreadCpuSampler(mt.names, mt.pids)).start();
        const consoles = spec.seconds > COLLECT_WINDOW_MIN_SECONDS ? target.applyLagConsoles?.() : undefined;
        if (consoles && spec.op === 'txn') (collector = new ApplyLagCollector(consoles, m0.micros)).start();
        if (consoles) (sampler = new ActivitySampler(consoles, m0.micros / 1000)).start();
      } else if (ev.event === 'measure-end') {
        m1 = mark();
        activityDone = sampler?.stop(); // its last sample at the window's end, not after the load generator's exit
        threadCpu = threads?.stop();
      } else if (ev.event === 'result') {
        result = ev as LoadResult;
      }
    }
  } finally {
    collected = await collector?.stop();
    activity = await (activityDone ?? sampler?.stop());
    threadCpu ??= threads?.stop();
  }
  const mainThreadCpu = await threadCpu;
  const code = await exited;
  clearTimeout(timer);
  if (!result) throw new Error(`load generator (${spec.system} ${spec.op}) exited with ${String(code)} without a result: ${stderr.trim()}`);
  return loadgenFigures(target, result, m0, m1, {
    ...(startMono !== undefined ? { startMono } : {}),
    ...(collector && collected ? { applies: { acc: collector.acc, ...collected } } : {}),
    ...(activity ? { activity } : {}),
    ...(mainThreadCpu ? { mainThreadCpu } : {}),
  });
}

/** What a window measured, from its measure-start and measure-end marks and the samplers that ran during it. */
async function loadgenFigures(
  target: Target,
  result: LoadResult,
  m0: Mark | undefined,
  m1: Mark | undefined,
  w: { startMono?: number; applies?: LoadgenRun['applies']; activity?: LoadgenRun['activity']; mainThreadCpu?: ThreadCpuSamples },
): Promise<LoadgenRun> {
  const [before, after] = await Promise.all([m0?.counters, m1?.counters]);
  const names = target.serverNames();
  const p0 = m0?.perProcess ?? [];
  const p1 = m1?.perProcess ?? [];
  const byProcess = p0.length === names.length && p1.length === names.length && p0.every((x, i) => x !== undefined && p1[i] !== undefined) ? names.map((name, i) => ({ name, seconds: p1[i]! - p0[i]! })) : undefined;
  const s0 = m0?.cpu;
  const s1 = m1?.cpu;
  return {
    ...(before && after ? { counters: counterDelta(before.counters, after.counters) } : {}),
    // The start-of-window read reset the monitors: the end-of-window read covers the window alone.
    ...(before && after?.loopDelay ? { loopDelay: after.loopDelay } : {}),
    result,
    ...(s0 !== undefined && s1 !== undefined
      ? { serverCpu: s1.userSeconds + s1.systemSeconds - (s0.userSeconds + s0.systemSeconds), serverSystemCpu: s1.systemSeconds - s0.systemSeconds }
      : {}),
    ...(m0?.wakeups !== undefined && m1?.wakeups !== undefined ? { serverWakeups: m1.wakeups - m0.wakeups } : {}),
    ...(byProcess ? { serverCpuByProcess: byProcess } : {}),
    ...(m0 && m1 && m1.threads.size > 0 ? { serverCpuByThread: threadCpuDelta(m0.threads, m1.threads) } : {}),
    ...(m0?.client !== undefined && m1?.client !== undefined ? { clientCpu: m1.client - m0.client } : {}),
    ...(m0?.machine !== undefined && m1?.machine !== undefined ? { machineCpu: m1.machine - m0.machine } : {}),
    ...(m0 ? { measureStartMicros: m0.micros } : {}),
    ...(m1 ? { measureEndMicros: m1.micros } : {}),
    ...(w.startMono !== undefined ? { measureStartMonoMicros: w.startMono } : {}),
    ...(w.applies ? { applies: w.applies } : {}),
    ...(w.activity ? { activity: w.activity } : {}),
    ...(w.mainThreadCpu ? { mainThreadCpu: w.mainThreadCpu } : {}),
  };
}

export function toRun(round: number, workload: string, system: VsSystem, r: LoadgenRun, applyLag?: ApplyLagFigures): VsRun {
  const h = hdr.decodeFromCompressedBase64(r.result.histogram);
  const ch = r.result.commitHistogram !== undefined ? hdr.decodeFromCompressedBase64(r.result.commitHistogram) : undefined;
  const secs = perSecondSpread(r.result.perSecond);
  const run: VsRun = {
    round,
    workload,
    system,
    ops: r.result.ops,
    errors: r.result.errors,
    ...(r.result.firstError !== undefined ? { firstError: r.result.firstError } : {}),
    seconds: r.result.seconds,
    opsPerSec: r.result.seconds > 0 ? r.result.ops / r.result.seconds : 0,
    p50Ms: h.getValueAtPercentile(50) / 1000,
    p99Ms: h.getValueAtPercentile(99) / 1000,
    ...(ch && ch.totalCount > 0 ? { commitP50Ms: ch.getValueAtPercentile(50) / 1000, commitP99Ms: ch.getValueAtPercentile(99) / 1000 } : {}),
    ...(applyLag ? { applyLag } : {}),
    ...(r.serverCpu !== undefined ? { serverCpuSeconds: r.serverCpu } : {}),
    ...(r.serverSystemCpu !== undefined ? { serverSystemCpuSeconds: r.serverSystemCpu } : {}),
    ...(r.serverWakeups !== undefined ? { serverWakeups: r.serverWakeups } : {}),
    ...(r.serverCpuByProcess ? { serverCpuByProcess: r.serverCpuByProcess } : {}),
    ...(r.serverCpuByThread ? { serverCpuByThread: r.serverCpuByThread } : {}),
    ...(r.clientCpu !== undefined ? { clientCpuSeconds: r.clientCpu } : {}),
    clientPeakRssBytes: r.result.maxRssBytes,
    ...(r.machineCpu !== undefined && r.serverCpu !== undefined && r.clientCpu !== undefined && r.result.seconds > 0 ? { otherCores: Math.max(0, r.machineCpu - r.serverCpu - r.clientCpu) / r.result.seconds } : {}),
    ...(r.result.commitPaths ? { commitPaths: r.result.commitPaths } : {}),
    ...(r.result.perSecond ? { perSecond: r.result.perSecond } : {}),
    ...(r.measureStartMonoMicros !== undefined ? { measureStartMonoMicros: r.measureStartMonoMicros } : {}),
    ...(secs ? { perSecondSpread: secs } : {}),
    ...(r.counters ? { counters: r.counters } : {}),
    ...(r.loopDelay ? { loopDelay: r.loopDelay } : {}),
    ...(r.activity ? { activity: r.activity } : {}),
    ...(r.mainThreadCpu ? { mainThreadCpu: r.mainThreadCpu } : {}),
  };
  h.destroy();
  ch?.destroy();
  return run;
}
