/**
 * RegularDB: committed versions. Key `SubDocKey + '#' + DocHybridTime(ht, writeId)` → value; the
 * descending DocHybridTime puts the newest version of each sub-key first. Meta keys (frontier, apply
 * states) use bytes below every DocKey.
 */
import type { HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import { APPLY_GROUP_PREFIX, APPLY_STATE_PREFIX, decodeApplyGroup, decodeApplyState, prefixEnd, type ApplyGroupEntry, type ApplyState } from './txn-records';
import type { KvOp } from './kv-engine';
import type { OpId, RowOp } from './doc-db-api';
import { alreadyHolds, opIdMax } from './frontier';
import { rowOpsToKv } from './row-kv';
import type { FrontierDb } from './frontier-db';
import { decodeStored, docKeyLength, parseRegularKey, REGULAR_DATA_END, REGULAR_DATA_START } from './storage-keys';
import type { StoredValue, SubKind } from './row-assembler';
import { DbError, ErrorCode } from '../common/errors';
import { decodeHt, encodeHt, HT_UNKNOWN, MAX_VERSION_HT_KEY, MIN_VERSION_HT_KEY, VERSION_BOUND_BUCKETS, VersionBounds } from './version-bounds';

/**
 * The history floor: the highest cutoff history GC ever used on this database (meta key, so a remote
 * bootstrap's raw copy carries it). Below it versions may be gone: reads there are refused, and the
 * history of a key is complete only from it on.
 */
export const HISTORY_FLOOR_KEY = Buffer.from([0x01, 0x43]); // "\x01C"

/** Versions rowVersions() reads of one row at most (bounds memory). */
const ROW_VERSIONS_MAX = 1_000_000;

/** Largest intra-batch write id (the DocHybridTime field is 32-bit): docdb/row-kv.ts. */
export { WRITE_ID_MAX } from './row-kv';

export class RegularDb {
  /**
   * Persisted apply states (unfinished applies), in memory and authoritative from open on: every
   * change goes through setApplyState / deleteApplyState after its durable write (apply.ts).
   */
  private readonly applyStates = new Map<TxnId, ApplyState>();

  /** Bounds on each row's newest version time (conflict checks; see version-bounds.ts); undefined: off. */
  private bounds: VersionBounds | undefined;

  /** See HISTORY_FLOOR_KEY: 0 while GC never ran here. */
  private floor: HybridTime = 0n;

  constructor(readonly db: FrontierDb) {}

  get historyFloor(): HybridTime {
    return this.floor;
  }

  /**
   * Raise the history floor to `ht` durably before GC deletes anything below it (RocksDB recovers a
   * prefix of its write-ahead log, so no delete written later survives a crash without this).
   */
  async raiseHistoryFloor(ht: HybridTime): Promise<void> {
    if (ht <= this.floor) return;
    await this.db.write([{ type: 'put', key: HISTORY_FLOOR_KEY, value: encodeHt(ht) }], this.db.frontier);
    this.floor = ht;
  }

  /** Re-read the floor (a remote bootstrap replaced the database's contents). */
  async reloadHistoryFloor(): Promise<void> {
    const v = await this.db.engine.get(HISTORY_FLOOR_KEY);
    this.floor = v === undefined ? 0n : decodeHt(v);
  }

  /**
   * Every stored version of the row `docKey` (encoded DocKey), newest first per sub-key: the row's
   * history from the history floor on (the status tablet reads a forgotten record's past with it).
   */
  async rowVersions(docKey: Buffer): Promise<Array<{ sub: SubKind; ht: HybridTime; writeId: number; value: StoredValue }>> {
    const out: Array<{ sub: SubKind; ht: HybridTime; writeId: number; value: StoredValue }> = [];
    const it = this.db.engine.iterator({ gte: docKey, lt: prefixEnd(docKey) });
    try {
      for (;;) {
        const e = await it.next();
        if (e === undefined) break;
        const k = Buffer.from(e[0].buffer, e[0].byteOffset, e[0].byteLength);
        if (docKeyLength(k) !== docKey.length) continue; // a longer DocKey sharing the prefix
        const p = parseRegularKey(k, docKey.length);
        out.push({ sub: p.sub, ht: p.ht, writeId: p.writeId, value: decodeStored(e[1]) });
        if (out.length > ROW_VERSIONS_MAX) throw new DbError(ErrorCode.INTERNAL, `row has more than ${ROW_VERSIONS_MAX} versions`);
      }
    } finally {
      await it.close();
    }
    return out;
  }

  /**
   * Upper bound of the hybrid time of every version stored under the row `docKey` (encoded DocKey):
   * a write-write check at a read time at or above it finds nothing newer and needs no engine walk.
   */
  newestVersionBound(docKey: Buffer): HybridTime {
    return this.bounds?.bound(docKey) ?? HT_UNKNOWN;
  }

  /** See VersionBounds.oldest; 0 (unknown) while version bounds are off. */
  oldestVersionBound(): HybridTime {
    return this.bounds?.oldest ?? 0n;
  }

  versionBoundStats(): ReturnType<VersionBounds['stats']> | undefined {
    return this.bounds?.stats();
  }

  static async open(db: FrontierDb, opts: { versionBounds?: boolean } = {}): Promise<RegularDb> {
    const r = new RegularDb(db);
    await r.reloadHistoryFloor();
    if (opts.versionBounds !== false) {
      const storedMax = await db.engine.get(MAX_VERSION_HT_KEY);
      const storedMin = await db.engine.get(MIN_VERSION_HT_KEY);
      let empty: boolean | undefined;
      if (storedMax === undefined || storedMin === undefined) {
        const it = db.engine.iterator({ gte: REGULAR_DATA_START, lt: REGULAR_DATA_END });
        try {
          empty = (await it.next()) === undefined;
        } finally {
          await it.close();
        }
      }
      // No persisted maximum: an empty database starts at 0; one written before the key existed is unknown.
      const floor = storedMax !== undefined ? decodeHt(storedMax) : empty ? 0n : HT_UNKNOWN;
      // No persisted minimum: an empty database has none yet (above every time); otherwise unknown (0).
      const min = storedMin !== undefined ? decodeHt(storedMin) : empty ? HT_UNKNOWN : 0n;
      const bounds = new VersionBounds(floor, VERSION_BOUND_BUCKETS, min);
      r.bounds = bounds;
      db.prepareWrite = (ops) => bounds.prepare(ops);
    }
    // Apply states (prefix 7) and apply-group records (prefix 8) are adjacent: one walk reads both.
    const it = db.engine.iterator({ gte: Buffer.from([APPLY_STATE_PREFIX]), lt: prefixEnd(Buffer.from([APPLY_GROUP_PREFIX])) });
    try {
      for (;;) {
        const e = await it.next();
        if (e === undefined) break;
        if (e[0][0] === APPLY_GROUP_PREFIX) {
          r.storedApplyGroups.push({ key: Buffer.from(e[0]), entries: decodeApplyGroup(e[1]) });
          continue;
        }
        const st = decodeApplyState(e[1]);
        r.applyStates.set(st.meta.txnId, st);
      }
    } finally {
      await it.close();
    }
    return r;
  }

  /**
   * Apply-group records found at open (txn-records.ts applyGroupKey): batches whose in-place applies
   * may still have intents on disk. The owner turns them into apply states (DocDb.open) and deletes
   * them once those applies are finished (resumeApplies).
   */
  readonly storedApplyGroups: Array<{ key: Buffer; entries: ApplyGroupEntry[] }> = [];

  applyState(txnId: TxnId): ApplyState | undefined {
    return this.applyStates.get(txnId);
  }

  /** Every unfinished apply, oldest commit first. */
  allApplyStates(): ApplyState[] {
    return [...this.applyStates.values()].sort((a, b) => (a.commitHt < b.commitHt ? -1 : a.commitHt > b.commitHt ? 1 : 0));
  }

  setApplyState(st: ApplyState): void {
    this.applyStates.set(st.meta.txnId, st);
  }

  deleteApplyState(txnId: TxnId): void {
    this.applyStates.delete(txnId);
  }

  /** KvOps writing `ops` at `ht` with write ids from `firstWriteId` (in op order); returns them and the next id (docdb/row-kv.ts). */
  static rowOpsToKv(ops: readonly RowOp[], ht: HybridTime, firstWriteId: number): { kv: KvOp[]; nextWriteId: number } {
    return rowOpsToKv(ops, ht, firstWriteId);
  }

  /** The single-tablet fast path; a replayed op (already below the frontier) is skipped. */
  async writeRows(ops: readonly RowOp[], ht: HybridTime, opId: OpId): Promise<void> {
    if (alreadyHolds(this.db.frontier, opId)) return;
    const { kv } = RegularDb.rowOpsToKv(ops, ht, 0);
    await this.db.write(kv, opId);
  }

  /**
   * Several Raft entries' writes in ONE engine batch (one RocksDB write, one thread-pool hop): each
   * batch keeps its own hybrid time; the frontier becomes the newest op id. Batches already below the
   * frontier (replay) are skipped; the caller passes them in log order.
   */
  async writeRowsMany(batches: ReadonlyArray<{ ops: readonly RowOp[]; ht: HybridTime; opId: OpId }>, extra?: { ops: readonly KvOp[]; opId: OpId }): Promise<void> {
    const kv: KvOp[] = [];
    let last: OpId | undefined;
    for (const b of batches) {
      if (alreadyHolds(this.db.frontier, b.opId)) continue;
      for (const op of RegularDb.rowOpsToKv(b.ops, b.ht, 0).kv) kv.push(op);
      last = b.opId;
    }
    if (extra !== undefined && extra.ops.length > 0) {
      for (const op of extra.ops) kv.push(op);
      last = last === undefined ? extra.opId : opIdMax(last, extra.opId);
    }
    if (last === undefined) return;
    await this.db.write(kv, last);
  }
}
