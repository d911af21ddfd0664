/**
 * Second by second, how busy each tserver's main thread was while a measured window ran, from the V8
 * CPU profiles of every tserver (`npm run bench -- --vs etcd --profile all`). It answers what the
 * whole-run profile cannot: in the window's slowest seconds, were the servers working (busy, on
 * something the profile then names) or waiting (idle: on the disk, a peer, the thread pool)?
 *
 * The profiles' sample times and the load generator's window start are read from the same clock
 * (CLOCK_MONOTONIC: V8's TimeTicks and process.hrtime), so a sample falls into the second of the
 * window it happened in. Sample i lasts from its timestamp to the next one's (as in
 * cpu-profile-summary.ts); a sample that spans a second boundary is split between the two.
 *
 * A profile samples wall time: a thread that is runnable but waiting for a core reads as busy. So the
 * benchmark also reads each main thread's CPU time from /proc (MainThreadCpuSampler) on the same
 * clock; busy minus on-CPU is the time that thread waited for a core — on a machine with fewer cores
 * than busy threads, the run queue.
 */
import { median } from '../activity';
import { isIdle, sampleEnd, sampleStamps, type CpuProfile } from './cpu-profile-summary';
import { PeriodicRead } from '../periodic-read';
import { threadCpuSeconds } from '../proc-stats';

/** Slowest seconds listed per window. */
export const BUSY_SLOW_SECONDS_LISTED = 5;

/**
 * Busy ms of the profiled thread in each whole second of a window that starts at `startMonoUs`
 * (µs, CLOCK_MONOTONIC) and lasts `seconds` seconds. Seconds the profile does not cover read 0 and
 * are reported in `covered` as false. Pure.
 */
export function busyMsPerSecond(p: CpuProfile, startMonoUs: number, seconds: number): { busyMs: number[]; covered: boolean[] } {
  const idle = new Set<number>();
  for (const n of p.nodes) if (isIdle(n.callFrame)) idle.add(n.id);
  const busyUs = new Array<number>(seconds).fill(0);
  const stamps = sampleStamps(p);
  const endUs = startMonoUs + seconds * 1e6;
  for (let i = 0; i < p.samples.length; i++) {
    if (idle.has(p.samples[i]!)) continue;
    let from = stamps[i]!;
    const to = Math.min(sampleEnd(p, stamps, i), endUs);
    if (to <= startMonoUs || from >= endUs) continue;
    from = Math.max(from, startMonoUs);
    while (from < to) {
      const s = Math.floor((from - startMonoUs) / 1e6);
      const boundary = startMonoUs + (s + 1) * 1e6;
      const upto = Math.min(to, boundary);
      busyUs[s]! += upto - from;
      from = upto;
    }
  }
  const covered = busyUs.map((_, s) => p.startTime <= startMonoUs + s * 1e6 && p.endTime >= startMonoUs + (s + 1) * 1e6);
  return { busyMs: busyUs.map((us) => us / 1000), covered };
}

/** How often MainThreadCpuSampler reads /proc (the CPU clock itself ticks every 10 ms). */
export const THREAD_CPU_EVERY_MS = 250;

/** Each server's main-thread CPU seconds so far (undefined: unreadable), at CLOCK_MONOTONIC µs. */
export interface ThreadCpuSamples {
  names: string[];
  samples: Array<{ monoUs: number; cpuSeconds: Array<number | undefined> }>;
}

/** Reads the main threads' CPU time of some server processes every THREAD_CPU_EVERY_MS while a window runs. */
export class MainThreadCpuSampler {
  private readonly out: ThreadCpuSamples;
  private readonly reads: PeriodicRead;

  constructor(
    names: readonly string[],
    private readonly pids: ReadonlyArray<number | undefined>,
    everyMs = THREAD_CPU_EVERY_MS,
  ) {
    this.out = { names: [...names], samples: [] };
    this.reads = new PeriodicRead(() => {
      this.sample();
      return Promise.resolve();
    }, everyMs);
  }

  private sample(): void {
    this.out.samples.push({ monoUs: Number(process.hrtime.bigint() / 1000n), cpuSeconds: this.pids.map((p) => threadCpuSeconds(p)) });
  }

  start(): void {
    this.reads.start(true);
  }

  /** Stop, take one last sample, and return them all. */
  async stop(): Promise<ThreadCpuSamples> {
    await this.reads.stop();
    this.sample();
    return this.out;
  }
}

/**
 * Server `i`'s main-thread CPU ms in each whole second of a window starting at `startMonoUs`,
 * interpolated linearly between the samples around each second boundary; undefined for a second
 * the samples do not span. Pure.
 */
export function onCpuMsPerSecond(s: ThreadCpuSamples, i: number, startMonoUs: number, seconds: number): Array<number | undefined> {
  const pts = s.samples.flatMap((x) => (x.cpuSeconds[i] === undefined ? [] : [{ t: x.monoUs, c: x.cpuSeconds[i]! }]));
  const at = (t: number): number | undefined => {
    if (pts.length === 0 || t < pts[0]!.t || t > pts[pts.length - 1]!.t) return undefined;
    let k = 1;
    while (k < pts.length && pts[k]!.t < t) k++;
    if (k >= pts.length) return pts[pts.length - 1]!.c;
    const a = pts[k - 1]!;
    const b = pts[k]!;
    return b.t === a.t ? b.c : a.c + ((b.c - a.c) * (t - a.t)) / (b.t - a.t);
  };
  return Array.from({ length: seconds }, (_, k) => {
    const from = at(startMonoUs + k * 1e6);
    const to = at(startMonoUs + (k + 1) * 1e6);
    return from === undefined || to === undefined ? undefined : Math.max(0, (to - from) * 1000);
  });
}

/** One profiled server: its name (ts0…) and profile. */
export interface ProfiledServer {
  name: string;
  profile: CpuProfile;
}

/** A measured window: its per-second completions and where it started on the monotonic clock. */
export interface TimedWindow {
  label: string;
  perSecond: readonly number[];
  startMonoUs: number;
  /** The servers' main-thread CPU read from /proc while the window ran (matched to the servers by name). */
  onCpu?: ThreadCpuSamples;
}

export interface BusyWindow {
  label: string;
  servers: string[];
  /** Median ops of the window's seconds (those every profile covers). */
  medianOps: number;
  /** Per server, the median busy ms per second over the window, and (with /proc samples) the median on-CPU ms. */
  medianBusyMs: number[];
  medianOnCpuMs?: Array<number | undefined>;
  /** The slowest seconds: second, ops, each server's busy ms (and on-CPU ms). */
  slowest: BusySecond[];
  /** The slowest tenth of the seconds (at least one) against the rest: per server, median busy (and on-CPU) ms. */
  slowTenth: BusyGroup;
  rest: BusyGroup;
}

export interface BusySecond {
  second: number;
  ops: number;
  busyMs: number[];
  onCpuMs?: Array<number | undefined>;
}

export interface BusyGroup {
  seconds: number;
  medianOps: number;
  medianBusyMs: number[];
  medianOnCpuMs?: Array<number | undefined>;
}

/** Pair a window's per-second rates with each server's busy time. Undefined when no second is covered by every profile. */
export function analyzeBusy(w: TimedWindow, servers: readonly ProfiledServer[], listed = BUSY_SLOW_SECONDS_LISTED): BusyWindow | undefined {
  if (servers.length === 0 || w.perSecond.length === 0) return undefined;
  const per = servers.map((s) => busyMsPerSecond(s.profile, w.startMonoUs, w.perSecond.length));
  const cpu = w.onCpu
    ? servers.map((s) => {
        const i = w.onCpu!.names.indexOf(s.name);
        return i < 0 ? undefined : onCpuMsPerSecond(w.onCpu!, i, w.startMonoUs, w.perSecond.length);
      })
    : undefined;
  const seconds: BusySecond[] = w.perSecond
    .map((ops, second) => ({ second, ops, busyMs: per.map((x) => x.busyMs[second]!), ...(cpu ? { onCpuMs: cpu.map((c) => c?.[second]) } : {}) }))
    .filter((s) => per.every((x) => x.covered[s.second]));
  if (seconds.length === 0) return undefined;
  const bySpeed = [...seconds].sort((a, b) => a.ops - b.ops || a.second - b.second);
  const tenth = Math.max(1, Math.floor(seconds.length / 10));
  const medianDefined = (xs: Array<number | undefined>): number | undefined => {
    const d = xs.filter((x): x is number => x !== undefined);
    return d.length === 0 ? undefined : median(d);
  };
  const group = (xs: readonly BusySecond[]): BusyGroup => ({
    seconds: xs.length,
    medianOps: median(xs.map((s) => s.ops)),
    medianBusyMs: servers.map((_, i) => median(xs.map((s) => s.busyMs[i]!))),
    ...(cpu ? { medianOnCpuMs: servers.map((_, i) => medianDefined(xs.map((s) => s.onCpuMs?.[i]))) } : {}),
  });
  const all = group(seconds);
  return {
    label: w.label,
    servers: servers.map((s) => s.name),
    medianOps: all.medianOps,
    medianBusyMs: all.medianBusyMs,
    ...(all.medianOnCpuMs ? { medianOnCpuMs: all.medianOnCpuMs } : {}),
    slowest: bySpeed.slice(0, listed),
    slowTenth: group(bySpeed.slice(0, tenth)),
    rest: group(bySpeed.slice(tenth)),
  };
}

/** Markdown table of the analysed windows ([] when none). */
export function renderBusyTimeline(ws: readonly BusyWindow[]): string[] {
  if (ws.length === 0) return [];
  const names = ws[0]!.servers;
  const withCpu = ws.some((w) => w.medianOnCpuMs !== undefined);
  const head = withCpu ? names.map((n) => `${n} busy / on CPU ms`) : names.map((n) => `${n} busy ms`);
  const lines = [`| main threads busy per second (V8 profiles of every tserver) | second | ops | of the median | ${head.join(' | ')} |`, `|---|---:|---:|---:|${names.map(() => '---:').join('|')}|`];
  const rel = (x: number, of: number): string => (of > 0 ? `${((x / of) * 100).toFixed(0)} %` : 'n/a');
  const cells = (busy: readonly number[] | undefined, onCpu: ReadonlyArray<number | undefined> | undefined): string =>
    names.map((_, i) => (busy === undefined ? '–' : `${busy[i]!.toFixed(0)}${withCpu ? ` / ${onCpu?.[i] === undefined ? '–' : onCpu[i]!.toFixed(0)}` : ''}`)).join(' | ');
  for (const w of ws) {
    lines.push(`| ${w.label}: every second (median) | | ${w.medianOps} | 100 % | ${cells(w.medianBusyMs, w.medianOnCpuMs)} |`);
    for (const s of w.slowest) lines.push(`| ${w.label} | ${s.second} | ${s.ops} | ${rel(s.ops, w.medianOps)} | ${cells(s.busyMs, s.onCpuMs)} |`);
    const some = w.rest.seconds > 0;
    lines.push(
      `| ${w.label}: slowest tenth of the seconds (median) | ${w.slowTenth.seconds} s | ${w.slowTenth.medianOps} | ${rel(w.slowTenth.medianOps, w.medianOps)} | ${cells(w.slowTenth.medianBusyMs, w.slowTenth.medianOnCpuMs)} |`,
      `| ${w.label}: the other seconds (median) | ${w.rest.seconds} s | ${some ? w.rest.medianOps : '–'} | ${some ? rel(w.rest.medianOps, w.medianOps) : '–'} | ${some ? cells(w.rest.medianBusyMs, w.rest.medianOnCpuMs) : cells(undefined, undefined)} |`,
    );
  }
  return [
    ...lines,
    '',
    "Busy ms: of each second of the measured window (1,000 ms), how long the tserver's main thread (JavaScript, its event loop) was sampled doing anything but waiting (V8's `(idle)`), from `--cpu-prof` profiles of every tserver whose sample times share the load generator's monotonic clock. A slow second in which the main threads are busier than usual is work (the whole-run profile says which); one in which they are idle is waiting — on the disk (a fdatasync, a RocksDB write behind a flush), on a peer, on the thread pool. A profile samples wall time, so busy also counts time the thread was runnable but waiting for a core." +
      (withCpu
        ? " On CPU ms: the same thread's CPU time in that second (utime+stime of /proc/PID/task/PID/stat, read every " + String(THREAD_CPU_EVERY_MS) + ' ms, 10 ms resolution); busy minus on CPU is the time it waited for a core (the run queue of a machine with fewer cores than busy threads).'
        : ''),
  ];
}
