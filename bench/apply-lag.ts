/**
 * Apply lag of distributed transactions: transaction commit → intents applied on EVERY replica of
 * every participant tablet. Each tserver keeps, per tablet replica, a bounded ring of the newest
 * applies (tserver/tablet/apply-lag-log.ts) and serves it at /api/v1/txn-applies?since=MICROS; this
 * file joins those records (pure core: applyLagOf) and polls the consoles until the transactions of
 * a measured window have settled (driver: measureApplyLag).
 *
 * A transaction counts as complete when it reports at least `minTablets` tablets and every one of them
 * reports `replicationFactor` distinct replicas; its lag is max(appliedMicros) − commitMicros. The
 * commit time is the physical part of the commit hybrid time and appliedMicros each replica's wall
 * clock: on one machine they share a clock, across machines skew would add to the figure.
 */
import * as hdr from 'hdr-histogram-js';
import { getJson } from '../lab/console-http';

export interface ApplyRecord {
  /** The tserver that reported it (one replica per tserver per tablet). */
  uuid: string;
  tabletId: string;
  txnId: string;
  commitMicros: number;
  appliedMicros: number;
}

export interface ApplyLagFigures {
  /** Transactions of the window whose every participant replica reported its apply. */
  complete: number;
  /** Transactions of the window with some records, but not from every replica (yet, or evicted). */
  incomplete: number;
  /** Absent when no transaction was complete. */
  p50Ms?: number;
  p99Ms?: number;
  maxMs?: number;
  /**
   * Commit → applied on the FIRST replica (the quickest of all participant replicas), over the same
   * complete transactions: the status tablet → participant leader → APPLY entry's Raft round path.
   * The rest of the lag is the spread to the last replica (followers learning the commit index and
   * applying).
   */
  firstP50Ms?: number;
  firstP99Ms?: number;
}

export interface ApplyLagFilter {
  replicationFactor: number;
  /** Participant tablets a transaction of this workload has at least (2 for the 2-row workload). */
  minTablets: number;
  /** Only transactions whose commit time lies in [commitFromMicros, commitToMicros]. */
  commitFromMicros?: number;
  commitToMicros?: number;
  /** Only these transactions. */
  txnIds?: ReadonlySet<string>;
}

/** Lags above this are clamped by the histogram (10 minutes). */
const LAG_US_MAX = 600_000_000;

interface TxnApplies {
  commitMicros: number;
  firstAppliedMicros: number;
  lastAppliedMicros: number;
  replicasByTablet: Map<string, Set<string>>;
}

function group(records: readonly ApplyRecord[], f: ApplyLagFilter): Map<string, TxnApplies> {
  const byTxn = new Map<string, TxnApplies>();
  for (const r of records) {
    if (f.txnIds && !f.txnIds.has(r.txnId)) continue;
    let t = byTxn.get(r.txnId);
    if (!t) byTxn.set(r.txnId, (t = { commitMicros: r.commitMicros, firstAppliedMicros: r.appliedMicros, lastAppliedMicros: r.appliedMicros, replicasByTablet: new Map() }));
    // Every replica records the same commit hybrid time; min() only guards against a stray record.
    t.commitMicros = Math.min(t.commitMicros, r.commitMicros);
    t.firstAppliedMicros = Math.min(t.firstAppliedMicros, r.appliedMicros);
    t.lastAppliedMicros = Math.max(t.lastAppliedMicros, r.appliedMicros);
    let reps = t.replicasByTablet.get(r.tabletId);
    if (!reps) t.replicasByTablet.set(r.tabletId, (reps = new Set()));
    reps.add(r.uuid);
  }
  for (const [id, t] of byTxn) {
    if ((f.commitFromMicros !== undefined && t.commitMicros < f.commitFromMicros) || (f.commitToMicros !== undefined && t.commitMicros > f.commitToMicros)) byTxn.delete(id);
  }
  return byTxn;
}

/** Lag per complete transaction in milliseconds (pure): to the last replica, and to the first. */
export function completeTxnLagsMs(records: readonly ApplyRecord[], f: ApplyLagFilter): { lagsMs: Map<string, number>; firstLagsMs: Map<string, number>; incomplete: number } {
  const lagsMs = new Map<string, number>();
  const firstLagsMs = new Map<string, number>();
  let incomplete = 0;
  for (const [id, t] of group(records, f)) {
    const tablets = [...t.replicasByTablet.values()];
    const complete = tablets.length >= f.minTablets && tablets.every((reps) => reps.size >= f.replicationFactor);
    if (complete) {
      lagsMs.set(id, Math.max(0, t.lastAppliedMicros - t.commitMicros) / 1000);
      firstLagsMs.set(id, Math.max(0, t.firstAppliedMicros - t.commitMicros) / 1000);
    } else incomplete++;
  }
  return { lagsMs, firstLagsMs, incomplete };
}

function percentilesMs(valuesMs: Iterable<number>): { p50Ms: number; p99Ms: number; maxMs: number } {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: LAG_US_MAX, numberOfSignificantValueDigits: 3 });
  let maxMs = 0;
  for (const ms of valuesMs) {
    h.recordValue(Math.min(LAG_US_MAX, Math.max(1, Math.round(ms * 1000))));
    maxMs = Math.max(maxMs, ms);
  }
  const r = { p50Ms: h.getValueAtPercentile(50) / 1000, p99Ms: h.getValueAtPercentile(99) / 1000, maxMs };
  h.destroy();
  return r;
}

/** p50/p99/max of the complete transactions' lags, the first-replica p50/p99, and the complete/incomplete counts (pure). */
export function applyLagOf(records: readonly ApplyRecord[], f: ApplyLagFilter): ApplyLagFigures {
  const { lagsMs, firstLagsMs, incomplete } = completeTxnLagsMs(records, f);
  if (lagsMs.size === 0) return { complete: 0, incomplete };
  const last = percentilesMs(lagsMs.values());
  const first = percentilesMs(firstLagsMs.values());
  return { complete: lagsMs.size, incomplete, ...last, firstP50Ms: first.p50Ms, firstP99Ms: first.p99Ms };
}

/** Parse one /api/v1/txn-applies answer (unknown at the boundary). */
export function parseApplies(body: unknown): ApplyRecord[] {
  const b = body as { uuid?: unknown; applies?: unknown };
  if (typeof b !== 'object' || b === null || typeof b.uuid !== 'string' || !Array.isArray(b.applies)) throw new Error('txn-applies: answer without uuid/applies');
  const uuid = b.uuid;
  return b.applies.map((x: unknown) => {
    const a = x as Partial<Record<'tabletId' | 'txnId' | 'commitMicros' | 'appliedMicros', unknown>>;
    if (typeof a.tabletId !== 'string' || typeof a.txnId !== 'string' || typeof a.commitMicros !== 'number' || typeof a.appliedMicros !== 'number') throw new Error('txn-applies: malformed record');
    return { uuid, tabletId: a.tabletId, txnId: a.txnId, commitMicros: a.commitMicros, appliedMicros: a.appliedMicros };
  });
}

const FETCH_TIMEOUT_MS = 10_000;
const POLL_INTERVAL_MS = 250;
/** How long measureApplyLag waits at most for the last transactions of a window to be applied everywhere. */
export const APPLY_SETTLE_MS_DEFAULT = 15_000;

/** Every tserver's applies finished at or after sinceMicros. */
export async function fetchApplies(webAddresses: readonly string[], sinceMicros: number): Promise<ApplyRecord[]> {
  const all = await Promise.all(webAddresses.map(async (w) => parseApplies(await getJson(`http://${w}/api/v1/txn-applies?since=${Math.floor(sinceMicros)}`, FETCH_TIMEOUT_MS))));
  return all.flat();
}

/**
 * Poll the consoles until every transaction of the window is complete and the record count stops
 * growing, or settleMs passes; then the figures of what was seen (incomplete ones are counted).
 */
export async function measureApplyLag(webAddresses: readonly string[], sinceMicros: number, f: ApplyLagFilter, settleMs = APPLY_SETTLE_MS_DEFAULT): Promise<ApplyLagFigures> {
  const until = Date.now() + settleMs;
  let lastCount = -1;
  for (;;) {
    const records = await fetchApplies(webAddresses, sinceMicros);
    const figures = applyLagOf(records, f);
    if ((figures.incomplete === 0 && records.length === lastCount) || Date.now() >= until) return figures;
    lastCount = records.length;
    await new Promise((r) => setTimeout(r, POLL_INTERVAL_MS));
  }
}
