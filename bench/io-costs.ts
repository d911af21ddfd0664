/**
 * What one operation costs the whole cluster, counted rather than timed: RPCs the tservers handled (by
 * method), Raft messages and batches sent, Raft log fsyncs, RocksDB write batches and ops per
 * database, and the garbage-collection pauses of the tservers' main threads (prom-client's
 * nodejs_gc_duration_seconds, by kind: time, and count). Each tserver exposes these counters on /prometheus-metrics (tserver/tserver-web.ts,
 * registerIoGauges); the benchmark reads every tserver's at the start and at the end of a measured
 * window and divides the change by the operations completed in it. Counts move far less with the
 * machine's speed than ops/s do (only batching follows the load), so they show what a change to the
 * code did even on a noisy machine. Pure parsing and arithmetic here, plus one fetch helper.
 */
import { DbError, ErrorCode } from '../common/errors';
import { httpRequest } from '../lab/console-http';
import { EVENT_LOOP_MONITOR_MS } from '../rpc';

/** Counter name → value, summed over the tservers (and over tablets for per-tablet gauges). */
export type IoCounters = Map<string, number>;

const DB_NAMES: Record<string, string> = { regulardb: 'RegularDB', intentsdb: 'IntentsDB' };

/** Prometheus seconds → the milliseconds the cost table shows. */
const GC_PAUSE_MS_PER_SECOND = 1000;

/** The counter a Prometheus series adds to, and the factor its value is taken with (undefined: not one of ours). */
function counterOf(metric: string, labels: Record<string, string>): { key: string; scale: number } | undefined {
  if (metric === 'nodejs_gc_duration_seconds_sum') return { key: `GC pause ms, main thread: ${labels['kind'] ?? '?'}`, scale: GC_PAUSE_MS_PER_SECOND };
  if (metric === 'nodejs_gc_duration_seconds_count') return { key: `GC pauses: ${labels['kind'] ?? '?'}`, scale: 1 };
  if (metric === 'tserver_rocksdb_background') {
    const b = BACKGROUND_KINDS[labels['kind'] ?? ''];
    return b === undefined ? undefined : { key: `RocksDB ${DB_NAMES[labels['db'] ?? ''] ?? labels['db'] ?? '?'}: ${b.what}`, scale: b.scale };
  }
  const key = counterKey(metric, labels);
  return key === undefined ? undefined : { key, scale: 1 };
}

function counterKey(metric: string, labels: Record<string, string>): string | undefined {
  const db = DB_NAMES[labels['db'] ?? ''] ?? labels['db'];
  switch (metric) {
    case 'tserver_rpc_ops_total':
      return `RPCs: ${labels['method'] ?? '?'}`;
    case 'tserver_raft_messages':
      return labels['direction'] === 'sent' ? 'Raft messages sent' : undefined;
    case 'tserver_raft_batches':
      return labels['direction'] === 'sent' ? 'Raft batches sent (frames)' : undefined;
    case 'tserver_log_fsyncs':
      return 'Raft log fsyncs';
    case 'tserver_raft_early':
      return EARLY_KINDS[labels['kind'] ?? ''];
    case 'tserver_raft_apply':
      return APPLY_KINDS[labels['kind'] ?? ''];
    case 'tserver_docdb_write_batches':
      return `${db} write batches${labels['synced'] === 'true' ? ', synced' : ''}`;
    case 'tserver_docdb_write_ops':
      return `${db} ${labels['op'] === 'del_range' ? 'range deletes' : labels['op'] === 'del' ? 'deletes' : 'puts'}`;
    default:
      return undefined;
  }
}

/** tserver_rocksdb_background's kinds (RocksDB's flushes, compactions and stalls; seconds shown as ms). */
const BACKGROUND_KINDS: Record<string, { what: string; scale: number }> = {
  flushes: { what: 'memtable flushes', scale: 1 },
  flush_cpu_seconds: { what: 'flush CPU ms', scale: 1000 },
  compactions: { what: 'compactions', scale: 1 },
  compaction_cpu_seconds: { what: 'compaction CPU ms', scale: 1000 },
  stall_seconds: { what: 'write stall ms', scale: 1000 },
};

/** tserver_raft_early's kinds (RaftGroup.kick: work done while a log sync ran instead of after it). */
const EARLY_KINDS: Record<string, string> = {
  applied_entries: 'Raft entries applied while a log sync ran',
  applied_saved_ms: 'Raft: ms those applies came sooner (summed)',
  sends: 'Raft sends while a log sync ran',
};

/** tserver_raft_apply's kinds (RaftGroup.applyCounts: the apply stage). */
const APPLY_KINDS: Record<string, string> = {
  entries: 'Raft apply stage: entries applied',
  batches: 'Raft apply stage: calls (batches)',
  wait_ms: 'Raft apply stage: ms entries waited (summed)',
  run_ms: 'Raft apply stage: ms calls ran (summed)',
};

const SERIES = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Add the counters of one /prometheus-metrics text into `into`. */
export function parseCounters(text: string, into: IoCounters = new Map()): IoCounters {
  for (const line of text.split('\n')) {
    const m = SERIES.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of m[2]!.matchAll(LABEL)) labels[l[1]!] = l[2]!;
    const c = counterOf(m[1]!, labels);
    const v = Number(m[3]);
    if (c === undefined || !Number.isFinite(v)) continue;
    into.set(c.key, (into.get(c.key) ?? 0) + v * c.scale);
  }
  return into;
}

/**
 * How late a tserver's event loop ran a timer (prom-client's nodejs_eventloop_lag_* gauges: a timer
 * every EVENT_LOOP_MONITOR_MS, its delay beyond that), since the previous scrape of /prometheus-metrics
 * — each scrape resets the monitor, so the scrape at the end of a measured window reads that window.
 * A turn of the loop this long is what every message, Raft round and reply waits behind.
 */
export interface LoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

const LOOP_SERIES = /^nodejs_eventloop_lag_(p50|p99|max)_seconds(?:\{[^}]*\})?\s+(\S+)$/;

/** The event-loop delay of one /prometheus-metrics text (undefined: the gauges are missing). */
export function parseLoopDelay(text: string): LoopDelay | undefined {
  const v: Partial<Record<'p50' | 'p99' | 'max', number>> = {};
  for (const line of text.split('\n')) {
    const m = LOOP_SERIES.exec(line);
    const x = m ? Number(m[2]) : NaN;
    if (m && Number.isFinite(x)) v[m[1] as 'p50' | 'p99' | 'max'] = Math.max(0, x * 1000 - EVENT_LOOP_MONITOR_MS);
  }
  return v.p50 !== undefined && v.p99 !== undefined && v.max !== undefined ? { p50Ms: v.p50, p99Ms: v.p99, maxMs: v.max } : undefined;
}

/** Each figure's worst over the tservers (undefined when none reported). */
export function worstLoopDelay(ds: ReadonlyArray<LoopDelay | undefined>): LoopDelay | undefined {
  const all = ds.filter((d): d is LoopDelay => d !== undefined);
  if (all.length === 0) return undefined;
  return { p50Ms: Math.max(...all.map((d) => d.p50Ms)), p99Ms: Math.max(...all.map((d) => d.p99Ms)), maxMs: Math.max(...all.map((d) => d.maxMs)) };
}

/** One read of every tserver: the summed counters, and the worst event-loop delay since the last read. */
export interface TserverScrape {
  counters: IoCounters;
  loopDelay?: LoopDelay;
}

/** Read and sum the counters of every tserver (web addresses "host:port"). */
export async function scrapeCounters(webAddresses: readonly string[], timeoutMs = 5000): Promise<TserverScrape> {
  const texts = await Promise.all(
    webAddresses.map(async (a) => {
      const url = `http://${a}/prometheus-metrics`;
      const r = await httpRequest(url, { timeoutMs });
      if (r.status !== 200) throw new DbError(ErrorCode.NETWORK_ERROR, `${url}: HTTP ${r.status}`);
      return r.body;
    }),
  );
  const all: IoCounters = new Map();
  for (const t of texts) parseCounters(t, all);
  const loopDelay = worstLoopDelay(texts.map(parseLoopDelay));
  return { counters: all, ...(loopDelay ? { loopDelay } : {}) };
}

/** after − before per counter (a counter only in one of them counts from 0). */
export function counterDelta(before: IoCounters, after: IoCounters): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set([...before.keys(), ...after.keys()])) out[k] = (after.get(k) ?? 0) - (before.get(k) ?? 0);
  return out;
}

/** Sum of several runs' deltas divided by their operations; counters that did not move are left out. */
export function costPerOp(runs: ReadonlyArray<{ ops: number; counters?: Record<string, number> }>): Record<string, number> | undefined {
  const withCounts = runs.filter((r) => r.counters !== undefined);
  if (withCounts.length === 0 || withCounts.length !== runs.length) return undefined;
  const ops = withCounts.reduce((a, r) => a + r.ops, 0);
  if (ops <= 0) return undefined;
  const sums: Record<string, number> = {};
  for (const r of withCounts) for (const [k, v] of Object.entries(r.counters!)) sums[k] = (sums[k] ?? 0) + v;
  const out: Record<string, number> = {};
  for (const k of sortCostKeys(Object.keys(sums))) if (sums[k] !== 0) out[k] = sums[k]! / ops;
  return out;
}

/** RPCs first, then Raft, then the databases, then garbage collection; alphabetical within a group. */
export function sortCostKeys(keys: readonly string[]): string[] {
  const rank = (k: string): number => (k.startsWith('RPCs') ? 0 : k.startsWith('Raft') ? 1 : k.startsWith('GC ') ? 3 : 2);
  return [...keys].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}
