/**
 * RegularDB: committed versions. Key `SubDocKey + '#' + DocHybridTime(ht, writeId)` → value; the
 * descending DocHybridTime puts the newest version of each sub-key first. Meta keys (frontier, apply
 * states) use bytes below every DocKey.
 */
import { assert } from '../common/assert';
import type { HybridTime } from '../common/hybrid-time';
import type { KvOp } from './kv-engine';
import type { OpId, RowOp } from './doc-db-api';
import { alreadyHolds } from './frontier';
import type { FrontierDb } from './frontier-db';
import { cellsOf } from './row-cells';
import { encodeStored, versionKey } from './storage-keys';

/** Largest intra-batch write id (the DocHybridTime field is 32-bit). */
export const WRITE_ID_MAX = 0xffff_ffff;

export class RegularDb {
  constructor(readonly db: FrontierDb) {}

  /** KvOps writing `ops` at `ht` with write ids from `firstWriteId` (in op order); returns them and the next id. */
  static rowOpsToKv(ops: readonly RowOp[], ht: HybridTime, firstWriteId: number): { kv: KvOp[]; nextWriteId: number } {
    const kv: KvOp[] = [];
    let wid = firstWriteId;
    for (const op of ops) {
      for (const c of cellsOf(op)) {
        assert(wid <= WRITE_ID_MAX, 'too many writes in one batch');
        kv.push({ type: 'put', key: versionKey(c.subKey, ht, wid++), value: encodeStored(c.value) });
      }
    }
    return { kv, nextWriteId: wid };
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
  async writeRowsMany(batches: ReadonlyArray<{ ops: readonly RowOp[]; ht: HybridTime; opId: OpId }>): Promise<void> {
    const kv: KvOp[] = [];
    let last: OpId | undefined;
    for (const b of batches) {
      if (alreadyHolds(this.db.frontier, b.opId)) continue;
      for (const op of RegularDb.rowOpsToKv(b.ops, b.ht, 0).kv) kv.push(op);
      last = b.opId;
    }
    if (last === undefined) return;
    await this.db.write(kv, last);
  }
}
