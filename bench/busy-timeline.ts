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
 */
import { isIdle, type CpuProfile } from './cpu-profile-summary';

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
  let t = p.startTime;
  const stamps = new Array<number>(p.samples.length);
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    stamps[i] = t;
  }
  const endUs = startMonoUs + seconds * 1e6;
  for (let i = 0; i < p.samples.length; i++) {
    if (idle.has(p.samples[i]!)) continue;
    let from = stamps[i]!;
    const to = Math.min(i + 1 < p.samples.length ? stamps[i + 1]! : Math.max(p.endTime, from), endUs);
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
}

export interface BusyWindow {
  label: string;
  servers: string[];
  /** Median ops of the window's seconds (those every profile covers). */
  medianOps: number;
  /** Per server, the median busy ms per second over the window. */
  medianBusyMs: number[];
  /** The slowest seconds: second, ops, each server's busy ms. */
  slowest: Array<{ second: number; ops: number; busyMs: number[] }>;
  /** The slowest tenth of the seconds (at least one) against the rest: per server, median busy ms. */
  slowTenth: { seconds: number; medianOps: number; medianBusyMs: number[] };
  rest: { seconds: number; medianOps: number; medianBusyMs: number[] };
}

function median(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
}

/** Pair a window's per-second rates with each server's busy time. Undefined when no second is covered by every profile. */
export function analyzeBusy(w: TimedWindow, servers: readonly ProfiledServer[], listed = BUSY_SLOW_SECONDS_LISTED): BusyWindow | undefined {
  if (servers.length === 0 || w.perSecond.length === 0) return undefined;
  const per = servers.map((s) => busyMsPerSecond(s.profile, w.startMonoUs, w.perSecond.length));
  const seconds = w.perSecond.map((ops, second) => ({ second, ops, busyMs: per.map((x) => x.busyMs[second]!) })).filter((s) => per.every((x) => x.covered[s.second]));
  if (seconds.length === 0) return undefined;
  const bySpeed = [...seconds].sort((a, b) => a.ops - b.ops || a.second - b.second);
  const tenth = Math.max(1, Math.floor(seconds.length / 10));
  const group = (xs: typeof seconds): { seconds: number; medianOps: number; medianBusyMs: number[] } => ({
    seconds: xs.length,
    medianOps: median(xs.map((s) => s.ops)),
    medianBusyMs: servers.map((_, i) => median(xs.map((s) => s.busyMs[i]!))),
  });
  return {
    label: w.label,
    servers: servers.map((s) => s.name),
    medianOps: median(seconds.map((s) => s.ops)),
    medianBusyMs: servers.map((_, i) => median(seconds.map((s) => s.busyMs[i]!))),
    slowest: bySpeed.slice(0, listed),
    slowTenth: group(bySpeed.slice(0, tenth)),
    rest: group(bySpeed.slice(tenth)),
  };
}

/** Markdown table of the analysed windows ([] when none). */
export function renderBusyTimeline(ws: readonly BusyWindow[]): string[] {
  if (ws.length === 0) return [];
  const names = ws[0]!.servers;
  const lines = [
    `| main threads busy per second (V8 profiles of every tserver) | second | ops | of the median | ${names.map((n) => `${n} busy ms`).join(' | ')} |`,
    `|---|---:|---:|---:|${names.map(() => '---:').join('|')}|`,
  ];
  const rel = (x: number, of: number): string => (of > 0 ? `${((x / of) * 100).toFixed(0)} %` : 'n/a');
  const ms = (xs: readonly number[]): string => xs.map((x) => x.toFixed(0)).join(' | ');
  for (const w of ws) {
    lines.push(`| ${w.label}: every second (median) | | ${w.medianOps} | 100 % | ${ms(w.medianBusyMs)} |`);
    for (const s of w.slowest) lines.push(`| ${w.label} | ${s.second} | ${s.ops} | ${rel(s.ops, w.medianOps)} | ${ms(s.busyMs)} |`);
    lines.push(
      `| ${w.label}: slowest tenth of the seconds (median) | ${w.slowTenth.seconds} s | ${w.slowTenth.medianOps} | ${rel(w.slowTenth.medianOps, w.medianOps)} | ${ms(w.slowTenth.medianBusyMs)} |`,
      `| ${w.label}: the other seconds (median) | ${w.rest.seconds} s | ${w.rest.seconds > 0 ? w.rest.medianOps : '–'} | ${w.rest.seconds > 0 ? rel(w.rest.medianOps, w.medianOps) : '–'} | ${w.rest.seconds > 0 ? ms(w.rest.medianBusyMs) : w.servers.map(() => '–').join(' | ')} |`,
    );
  }
  return [
    ...lines,
    '',
    "Busy ms: of each second of the measured window (1,000 ms), how long the tserver's main thread (JavaScript, its event loop) was sampled doing anything but waiting (V8's `(idle)`), from `--cpu-prof` profiles of every tserver whose sample times share the load generator's monotonic clock. A slow second in which the main threads are busier than usual is work (the whole-run profile says which); one in which they are idle is waiting — on the disk (a fdatasync, a RocksDB write behind a flush), on a peer, on the thread pool. A sample includes time the thread waited for a core, so on a saturated machine busy time also counts run-queue waits.",
  ];
}
