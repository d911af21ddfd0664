/**
 * Apply lag of this replica: for each transaction it moved from IntentsDB into RegularDB, the time
 * from the commit hybrid time to the end of that apply (this server's clock). Kept in a bounded ring
 * (the newest APPLY_LAG_RECORDS_MAX) for the /api/v1/txn-applies console and the benchmark, which
 * joins the records of every replica to get "commit → applied on every replica".
 */
import { htPhysicalMicros, type HybridTime } from '../../common/hybrid-time';
import type { TxnId } from '../../common/ids';

/** Records kept per tablet replica. */
export const APPLY_LAG_RECORDS_MAX = 20_000;

export interface ApplyLagRecord {
  txnId: TxnId;
  /** Commit hybrid time, physical part in microseconds since the epoch. */
  commitMicros: number;
  /** When this replica finished the apply, microseconds since the epoch. */
  appliedMicros: number;
  lagMs: number;
  /** When this replica applied the APPLY entry (its intents then start moving), microseconds since the epoch. */
  markedMicros?: number;
}

export class ApplyLagLog {
  private readonly ring: ApplyLagRecord[] = [];
  private next = 0;

  record(txnId: TxnId, commitHt: HybridTime, appliedMicros: number, markedMicros?: number): ApplyLagRecord {
    const commitMicros = Number(htPhysicalMicros(commitHt));
    const r: ApplyLagRecord = { txnId, commitMicros, appliedMicros, lagMs: Math.max(0, (appliedMicros - commitMicros) / 1000), ...(markedMicros !== undefined ? { markedMicros } : {}) };
    if (this.ring.length < APPLY_LAG_RECORDS_MAX) this.ring.push(r);
    else this.ring[this.next] = r;
    this.next = (this.next + 1) % APPLY_LAG_RECORDS_MAX;
    return r;
  }

  /** Records whose apply finished at or after `sinceMicros`, oldest first. */
  since(sinceMicros: number): ApplyLagRecord[] {
    const out: ApplyLagRecord[] = [];
    const n = this.ring.length;
    // Oldest first: from `next` once the ring is full, else from 0 (then `next` === n).
    const start = n < APPLY_LAG_RECORDS_MAX ? 0 : this.next;
    for (let k = 0; k < n; k++) {
      const r = this.ring[(start + k) % n]!;
      if (r.appliedMicros >= sinceMicros) out.push(r);
    }
    return out;
  }
}

export interface ApplyLagSummary {
  applies: number;
  /** Nearest-rank percentiles and the most of the records' lags; absent without records. */
  p50Ms?: number;
  p99Ms?: number;
  maxMs?: number;
  /** The newest record (by when its apply finished). */
  last?: ApplyLagRecord;
}

/** How many applies, their lag percentiles and the newest one (for the console's apply page). */
export function summarizeApplies(records: readonly ApplyLagRecord[]): ApplyLagSummary {
  if (records.length === 0) return { applies: 0 };
  const lags = records.map((r) => r.lagMs).sort((a, b) => a - b);
  const rank = (p: number): number => lags[Math.max(0, Math.ceil((p / 100) * lags.length) - 1)]!;
  let last = records[0]!;
  for (const r of records) if (r.appliedMicros >= last.appliedMicros) last = r;
  return { applies: records.length, p50Ms: rank(50), p99Ms: rank(99), maxMs: lags[lags.length - 1]!, last };
}
