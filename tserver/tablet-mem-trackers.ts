/**
 * Memory trackers of a tablet server's tablets (the console's /mem-trackers and the memtable gauges):
 * current and peak memtable and Raft log cache bytes per tablet, and the size history the master's
 * apply timeline reads. The peak is the largest size seen by any sample (every console read, every
 * metrics scrape and a periodic sampler), so a spike between two samples can be missed — the same
 * best-effort a sampled gauge gives.
 */
import type { MemTrackerNode } from '../rpc';
import type { TabletManager } from './tablet-manager';
import type { TabletPeer } from './tablet/tablet-peer';
import { TabletSizeHistory } from './tablet-size-history';

/** Least time between two samples of the size history (the periodic sampler runs every second). */
const HISTORY_SAMPLE_GAP_MS = 900;

export const EMPTY_SIZES = { regulardb: { memtableBytes: 0, sstBytes: 0 }, intentsdb: { memtableBytes: 0, sstBytes: 0, intentCount: 0 } };

export type Sizes = typeof EMPTY_SIZES & { regulardb: { rowCache?: { rows: number; bytes: number; hits: number; misses: number } } };

export interface TabletMem {
  regularBytes: number;
  regularPeakBytes: number;
  intentsBytes: number;
  intentsPeakBytes: number;
  /** Raft log entries held in memory (the tablet's share of global_log_cache_size_limit_mb). */
  logCacheBytes: number;
  logCachePeakBytes: number;
}

/** Current and peak memtable bytes per tablet, refreshed by sampling the tablets' databases. */
export class TabletMemTrackers {
  private readonly byTablet = new Map<string, TabletMem>();
  private sampling: Promise<void> | undefined;
  /** Sizes over the last minutes for the master's apply timeline (one sample a second at most). */
  readonly history = new TabletSizeHistory();
  private lastHistoryMs = 0;

  constructor(private readonly manager: () => TabletManager) {}

  /** Samples every tablet once; concurrent callers share one sampling pass. */
  sample(): Promise<void> {
    this.sampling ??= this.doSample().finally(() => (this.sampling = undefined));
    return this.sampling;
  }

  /** Record one tablet's sizes (used by callers that already read them, e.g. /tablets). */
  note(tabletId: string, s: Sizes, logCacheBytes?: number): void {
    const m = this.byTablet.get(tabletId) ?? { regularBytes: 0, regularPeakBytes: 0, intentsBytes: 0, intentsPeakBytes: 0, logCacheBytes: 0, logCachePeakBytes: 0 };
    m.regularBytes = s.regulardb.memtableBytes;
    m.intentsBytes = s.intentsdb.memtableBytes;
    m.regularPeakBytes = Math.max(m.regularPeakBytes, m.regularBytes);
    m.intentsPeakBytes = Math.max(m.intentsPeakBytes, m.intentsBytes);
    if (logCacheBytes !== undefined) {
      m.logCacheBytes = logCacheBytes;
      m.logCachePeakBytes = Math.max(m.logCachePeakBytes, logCacheBytes);
    }
    this.byTablet.set(tabletId, m);
  }

  private async doSample(): Promise<void> {
    const live = new Set<string>();
    const rows: Array<{ tabletId: string; table: string; role: string; sizes: Sizes }> = [];
    for (const p of this.manager().list()) {
      live.add(p.tabletId);
      const sizes = await sizesOf(p);
      this.note(p.tabletId, sizes, p.logCacheBytes());
      rows.push({ tabletId: p.tabletId, table: p.meta.tableName, role: p.status().role, sizes });
    }
    for (const id of [...this.byTablet.keys()]) if (!live.has(id)) this.byTablet.delete(id);
    // Console reads sample too; the history keeps the periodic pace (HISTORY_SAMPLE_GAP_MS).
    const now = Date.now();
    if (now - this.lastHistoryMs >= HISTORY_SAMPLE_GAP_MS) {
      this.lastHistoryMs = now;
      this.history.record(now, rows);
    }
  }

  current(tabletId: string): TabletMem | undefined {
    return this.byTablet.get(tabletId);
  }

  /**
   * YugabyteDB's tree: server → Tablets → tablet-<id> → RegularDB / IntentsDB → MemTable, and
   * server → log_cache → log_cache-<id> (the Raft log entries each tablet keeps in memory).
   */
  tree(serverId: string): MemTrackerNode {
    const tablets: MemTrackerNode[] = [];
    const logCaches: MemTrackerNode[] = [];
    let sum = 0;
    let sumPeak = 0;
    let logSum = 0;
    let logSumPeak = 0;
    for (const [id, m] of [...this.byTablet.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const db = (name: string, cur: number, peak: number): MemTrackerNode => ({ id: name, currentBytes: cur, peakBytes: peak, children: [{ id: 'MemTable', currentBytes: cur, peakBytes: peak }] });
      const cur = m.regularBytes + m.intentsBytes;
      // A tablet's peak is at least its current total and at least each child's peak.
      const peak = Math.max(cur, m.regularPeakBytes, m.intentsPeakBytes);
      tablets.push({ id: `tablet-${id}`, currentBytes: cur, peakBytes: peak, children: [db('RegularDB', m.regularBytes, m.regularPeakBytes), db('IntentsDB', m.intentsBytes, m.intentsPeakBytes)] });
      sum += cur;
      sumPeak += peak;
      logCaches.push({ id: `log_cache-${id}`, currentBytes: m.logCacheBytes, peakBytes: m.logCachePeakBytes });
      logSum += m.logCacheBytes;
      logSumPeak += m.logCachePeakBytes;
    }
    const tabletsNode: MemTrackerNode = { id: 'Tablets', currentBytes: sum, peakBytes: sumPeak, children: tablets };
    const logNode: MemTrackerNode = { id: 'log_cache', currentBytes: logSum, peakBytes: logSumPeak, children: logCaches };
    return { id: serverId, currentBytes: sum + logSum, peakBytes: sumPeak + logSumPeak, children: [tabletsNode, logNode] };
  }
}

export async function sizesOf(p: TabletPeer): Promise<Sizes> {
  return p.sizes().catch(() => EMPTY_SIZES);
}
