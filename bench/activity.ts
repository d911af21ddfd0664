/**
 * What the tservers did in the background while a long window ran, to explain its slow seconds. A
 * window of minutes has seconds far below its median (one 300 s run of 2-row transactions had a
 * second at 171 txn/s against a median of 618); the question is what happened in them. Every
 * ACTIVITY_EVERY_MS the sampler reads each tserver's /api/v1/tablets and sums, over the replicas of the
 * whole cluster: RocksDB memtable flushes and compactions completed and their CPU (from RocksDB's
 * statistics), the Raft logs' fdatasyncs (how many, their ms, those of WAL_SLOW_SYNC_MS or more: disk
 * stalls), and the tablets' Raft terms (an election raises its tablet's term). The report then names,
 * for the slowest seconds, what completed in the sample intervals around each, and compares the
 * seconds near a flush, and near a slow fdatasync, with the rest.
 *
 * /api/v1/tablets, not /prometheus-metrics: reading the latter resets the event-loop lag monitors the
 * window's end-of-window read reports.
 */
import { getJson } from '../lab/console-http';
import { WAL_SLOW_SYNC_MS } from '../raft';
import { PeriodicRead } from './periodic-read';

/** How often the sampler reads the consoles (the report's resolution for "what happened around a second"). */
export const ACTIVITY_EVERY_MS = 2000;
/** Slowest seconds the report lists per window. */
export const SLOW_SECONDS_LISTED = 5;

/** Cumulative counts over the cluster at one moment, `atMs` after the window started. */
export interface ActivitySample {
  atMs: number;
  flushes: number;
  compactions: number;
  /** Flush and compaction CPU of RocksDB's threads, ms. */
  backgroundCpuMs: number;
  /** Sum over tablets of the highest term any replica reports. */
  terms: number;
  /** Raft log fdatasyncs of every replica, the ms they took, and those of WAL_SLOW_SYNC_MS or more. */
  walSyncs: number;
  walSyncMs: number;
  walSlowSyncs: number;
}

interface TabletsBody {
  tablets: Array<{
    tabletId: string;
    term: number;
    background?: Partial<Record<'regulardb' | 'intentsdb', { flushes: number; compactions: number; flushCpuSeconds: number; compactionCpuSeconds: number }>>;
    wal?: { fsyncs: number; syncMs: number; slowSyncs: number };
  }>;
}

/** One sample from the /api/v1/tablets bodies of every tserver. Pure. */
export function sampleOf(atMs: number, bodies: readonly TabletsBody[]): ActivitySample {
  const s: ActivitySample = { atMs, flushes: 0, compactions: 0, backgroundCpuMs: 0, terms: 0, walSyncs: 0, walSyncMs: 0, walSlowSyncs: 0 };
  const terms = new Map<string, number>();
  for (const b of bodies) {
    for (const t of b.tablets) {
      terms.set(t.tabletId, Math.max(terms.get(t.tabletId) ?? 0, t.term));
      if (t.wal) {
        s.walSyncs += t.wal.fsyncs;
        s.walSyncMs += t.wal.syncMs;
        s.walSlowSyncs += t.wal.slowSyncs;
      }
      for (const w of [t.background?.regulardb, t.background?.intentsdb]) {
        if (w === undefined) continue;
        s.flushes += w.flushes;
        s.compactions += w.compactions;
        s.backgroundCpuMs += (w.flushCpuSeconds + w.compactionCpuSeconds) * 1000;
      }
    }
  }
  for (const v of terms.values()) s.terms += v;
  return s;
}

export class ActivitySampler {
  private readonly samples: ActivitySample[] = [];
  private readonly reads: PeriodicRead;
  private failures = 0;
  private result: Promise<{ samples: ActivitySample[]; failures: number }> | undefined;

  constructor(
    private readonly webAddresses: readonly string[],
    /** Date.now() when the window started. */
    private readonly startMs: number,
    private readonly everyMs = ACTIVITY_EVERY_MS,
  ) {
    this.reads = new PeriodicRead(() => this.read(), everyMs);
  }

  /** The first sample at once (the window's start), then one every period. */
  start(): void {
    this.reads.start(true);
  }

  private async read(): Promise<void> {
    const at = Date.now() - this.startMs;
    try {
      const bodies = (await Promise.all(this.webAddresses.map((w) => getJson(`http://${w}/api/v1/tablets`, this.everyMs)))) as TabletsBody[];
      this.samples.push(sampleOf(at, bodies));
    } catch {
      this.failures++; // a gap: the next interval is simply longer
    }
  }

  /** Stop, take one last sample, and return them all (in time order) with the reads that failed. Calling it again returns the same. */
  stop(): Promise<{ samples: ActivitySample[]; failures: number }> {
    this.result ??= (async () => {
      await this.reads.stop();
      await this.read();
      return { samples: this.samples, failures: this.failures };
    })();
    return this.result;
  }
}

/** What completed over the cluster in some stretch of time. */
export interface Activity {
  flushes: number;
  compactions: number;
  backgroundCpuMs: number;
  elections: number;
  /** Raft log fdatasyncs, their ms in all, and those of WAL_SLOW_SYNC_MS or more. */
  walSyncs: number;
  walSyncMs: number;
  walSlowSyncs: number;
}

const ACTIVITY_KEYS: ReadonlyArray<keyof Activity> = ['flushes', 'compactions', 'backgroundCpuMs', 'elections', 'walSyncs', 'walSyncMs', 'walSlowSyncs'];

/** What completed between two samples. */
interface Interval extends Activity {
  fromMs: number;
  toMs: number;
}

function intervals(samples: readonly ActivitySample[]): Interval[] {
  const out: Interval[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    // A replica reopened (counters restart) would read negative: count nothing rather than garbage.
    const d = (x: number, y: number): number => Math.max(0, y - x);
    out.push({
      fromMs: a.atMs,
      toMs: b.atMs,
      flushes: d(a.flushes, b.flushes),
      compactions: d(a.compactions, b.compactions),
      backgroundCpuMs: d(a.backgroundCpuMs, b.backgroundCpuMs),
      elections: d(a.terms, b.terms),
      // Samples from before this field existed read undefined: count nothing.
      walSyncs: d(a.walSyncs ?? 0, b.walSyncs ?? 0),
      walSyncMs: d(a.walSyncMs ?? 0, b.walSyncMs ?? 0),
      walSlowSyncs: d(a.walSlowSyncs ?? 0, b.walSlowSyncs ?? 0),
    });
  }
  return out;
}

/** One second of the window, with what completed in the sample intervals that overlap it. */
export interface SlowSecond extends Activity {
  /** Second of the window (0-based: [second, second + 1) s after it started). */
  second: number;
  ops: number;
}

export interface SecondsAnalysis {
  medianOps: number;
  slowest: SlowSecond[];
  /** Seconds overlapping an interval in which some replica's memtable flushed, and the rest. */
  nearFlush: { seconds: number; medianOps: number };
  noFlush: { seconds: number; medianOps: number };
  /** Seconds overlapping an interval with a Raft log fdatasync of WAL_SLOW_SYNC_MS or more, and the rest. */
  nearSlowSync: { seconds: number; medianOps: number };
  noSlowSync: { seconds: number; medianOps: number };
  /** Over every interval: the mean fdatasync ms, and the slow ones. */
  walSyncMeanMs: number;
  walSlowSyncs: number;
}

/** Mean ms of the fdatasyncs counted (0 when none). */
export function meanSyncMs(x: { walSyncs: number; walSyncMs: number }): number {
  return x.walSyncs > 0 ? x.walSyncMs / x.walSyncs : 0;
}

export { WAL_SLOW_SYNC_MS };

function sumOf(xs: readonly Activity[]): Activity {
  const out = { flushes: 0, compactions: 0, backgroundCpuMs: 0, elections: 0, walSyncs: 0, walSyncMs: 0, walSlowSyncs: 0 };
  for (const x of xs) for (const k of ACTIVITY_KEYS) out[k] += x[k];
  return out;
}

/** The lower median (0 for none): a figure that occurred, not an average of two. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
}

/**
 * Pair the load generator's per-second counts with the samples: for each second, what completed in
 * the intervals overlapping it. Undefined without at least two samples covering part of the window.
 */
export function analyzeSeconds(perSecond: readonly number[], samples: readonly ActivitySample[], listed = SLOW_SECONDS_LISTED): SecondsAnalysis | undefined {
  const iv = intervals(samples);
  if (iv.length === 0 || perSecond.length === 0) return undefined;
  const covered: SlowSecond[] = [];
  perSecond.forEach((ops, second) => {
    const from = second * 1000;
    const to = from + 1000;
    const over = iv.filter((x) => x.fromMs < to && x.toMs > from);
    if (over.length === 0) return;
    covered.push({ second, ops, ...sumOf(over) });
  });
  if (covered.length === 0) return undefined;
  const split = (pred: (s: SlowSecond) => boolean): [{ seconds: number; medianOps: number }, { seconds: number; medianOps: number }] => {
    const yes = covered.filter(pred);
    const no = covered.filter((s) => !pred(s));
    return [
      { seconds: yes.length, medianOps: median(yes.map((s) => s.ops)) },
      { seconds: no.length, medianOps: median(no.map((s) => s.ops)) },
    ];
  };
  const [nearFlush, noFlush] = split((s) => s.flushes > 0);
  const [nearSlowSync, noSlowSync] = split((s) => s.walSlowSyncs > 0);
  const all = sumOf(iv);
  return {
    medianOps: median(covered.map((s) => s.ops)),
    slowest: [...covered].sort((a, b) => a.ops - b.ops || a.second - b.second).slice(0, listed),
    nearFlush,
    noFlush,
    nearSlowSync,
    noSlowSync,
    walSyncMeanMs: meanSyncMs(all),
    walSlowSyncs: all.walSlowSyncs,
  };
}
