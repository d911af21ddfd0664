/**
 * The records of lazily started transactions on a status tablet (docs/transactions.md, "A status
 * record without its own round trip"; the id format: common/lazy-txn-id.ts). Such a transaction sends
 * no CreateTransaction: its intents may be on participant tablets before its status tablet ever
 * heard of it. The rules that keep "no record" honest, all under the transaction's lock:
 *
 * - A record is created only by the transaction's first commit attempt or a heartbeat, and only while
 *   the id is 'creatable' (its start time at most createMaxAgeMs old on this leader's clock).
 * - A reader asking about an id without a record is told PENDING (with the priority the id carries)
 *   while some leader may still create it, ABORTED once none can ('dead': older by another
 *   max_clock_skew_usec) — unless the record's history shows its commit (a forgotten one).
 * - Aborting such an id (a conflicting transaction of higher priority, a client settling a lost
 *   commit answer, the client's own abort after a write) first replicates an ABORTED record, so a
 *   commit or heartbeat that arrives later finds it and fails; that record is forgotten only once
 *   the id is dead. The history is checked first: a commit applied everywhere and forgotten is told
 *   as COMMITTED, never overwritten.
 * - The commit's create happens once: a resent commit (after a PENDING answer) does not create, and
 *   a commit whose answer was lost is settled by a status query that writes the ABORTED record first.
 */
import { MAX_CLOCK_SKEW_USEC } from '../../common/common-flags';
import type { Flags } from '../../common/flags';
import { htPhysicalMicros, type HybridTime } from '../../common/hybrid-time';
import type { TxnId } from '../../common/ids';
import { decodeLazyTxnId, lazyRecordState, type LazyTxnInfo } from '../../common/lazy-txn-id';
import { Isolation, type DocDbApi } from '../../docdb';
import type { TxnRecord } from '../tablet/participant/txn-record';
import { recordHistory } from './record-history';
import { TRANSACTION_HEARTBEAT_USEC, TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS } from './txn-flags';

export interface LazyRecordsHost {
  flags: Flags;
  /** This leader's wall clock (µs). */
  wallMicros(): number;
  db(): Pick<DocDbApi, 'historyFloor' | 'rowVersions'>;
  /** Replicate `rec` as a new record (PENDING from a heartbeat, ABORTED as a tombstone) and keep it in the map. */
  replicateNew(rec: TxnRecord): Promise<void>;
}

export type UnknownAnswer = { status: 'COMMITTED' | 'ABORTED' | 'PENDING'; commitHt: HybridTime; priority: number; neverCommitted: boolean };

export class LazyRecords {
  readonly metrics = { created: 0, tombstones: 0, pendingAnswers: 0 };

  constructor(private readonly host: LazyRecordsHost) {}

  /** The id's carried facts and where this leader stands with it; undefined: not a lazily started id. */
  state(id: TxnId): { info: LazyTxnInfo; state: 'creatable' | 'young' | 'dead' } | undefined {
    const info = decodeLazyTxnId(id);
    if (!info) return undefined;
    const f = this.host.flags;
    const createMaxAgeMs = (f.get(TRANSACTION_HEARTBEAT_USEC) / 1000) * f.get(TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS);
    return { info, state: lazyRecordState(info.startHt, this.host.wallMicros(), createMaxAgeMs, f.get(MAX_CLOCK_SKEW_USEC) / 1000) };
  }

  /** A PENDING record for the first commit or a heartbeat of a creatable id (undefined: not creatable). */
  newRecord(id: TxnId): TxnRecord | undefined {
    const s = this.state(id);
    if (s?.state !== 'creatable') return undefined;
    return recordOf(s.info, id);
  }

  /**
   * The answer for a lazily started id this leader holds no record of (undefined: not such an id).
   * `settle`: the caller needs a definite answer (a client whose commit answer was lost; an abort):
   * while the id may still be created, an ABORTED record is replicated first. Call under the id's lock.
   */
  async answerUnknown(id: TxnId, settle: boolean, participants: string[] = []): Promise<UnknownAnswer | undefined> {
    const s = this.state(id);
    if (!s) return undefined;
    const h = await recordHistory(this.host.db(), id, s.info.startHt);
    if (h.committedAt !== undefined) return { status: 'COMMITTED', commitHt: h.committedAt, priority: s.info.priority, neverCommitted: false };
    if (s.state === 'dead' || h.aborted) return { status: 'ABORTED', commitHt: 0n, priority: s.info.priority, neverCommitted: h.neverCommitted };
    if (!settle) {
      this.metrics.pendingAnswers++;
      return { status: 'PENDING', commitHt: 0n, priority: s.info.priority, neverCommitted: false };
    }
    const rec = recordOf(s.info, id);
    await this.host.replicateNew({ ...rec, status: 'ABORTED', participants: [...new Set(participants)] });
    this.metrics.tombstones++;
    return { status: 'ABORTED', commitHt: 0n, priority: s.info.priority, neverCommitted: true };
  }

  /** A heartbeat's create: PENDING replicated, or what the history says (under the id's lock). */
  async createAtHeartbeat(id: TxnId): Promise<'PENDING' | 'COMMITTED' | 'ABORTED'> {
    const s = this.state(id);
    if (!s) return 'ABORTED';
    // A heartbeat in flight may arrive after the commit, its applies and the forget.
    const h = await recordHistory(this.host.db(), id, s.info.startHt);
    if (h.committedAt !== undefined) return 'COMMITTED';
    const rec = this.newRecord(id);
    if (h.aborted || !rec) return 'ABORTED';
    await this.host.replicateNew(rec);
    this.metrics.created++;
    return 'PENDING';
  }

  /** How long a finished record must stay before it may be forgotten (ms; 0: now). */
  holdMs(rec: TxnRecord): number {
    const s = this.state(rec.txnId);
    if (!s || rec.status !== 'ABORTED' || s.state === 'dead') return 0;
    const f = this.host.flags;
    const deadAfterMs = (f.get(TRANSACTION_HEARTBEAT_USEC) / 1000) * f.get(TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS) + f.get(MAX_CLOCK_SKEW_USEC) / 1000;
    const ageMs = (this.host.wallMicros() - Number(htPhysicalMicros(s.info.startHt))) / 1000;
    return Math.max(1, Math.ceil(deadAfterMs - ageMs) + 1);
  }

}

function recordOf(info: LazyTxnInfo, id: TxnId): TxnRecord {
  return { txnId: id, status: 'PENDING', isolation: info.isolation === 'serializable' ? Isolation.SERIALIZABLE : Isolation.SNAPSHOT, priority: info.priority, startHt: info.startHt, commitHt: 0n, participants: [] };
}
