/**
 * What the history of a transaction's record row in a status tablet's RegularDB tells a ready
 * leader that holds no record of it (docs/transactions.md, lost commit answers). Every committed
 * transaction's COMMITTED entry wrote the row at its commit time, and its forget is a row tombstone
 * at a later time: the COMMITTED version stays below the tombstone until history GC drops both,
 * which needs a cutoff at or above the forget (so above the commit and the start); the floor (the
 * highest cutoff GC used, carried by remote bootstrap's raw copy) is at or above it then. So: a
 * COMMITTED version → committed at its time; none, and a start time at or above the floor → it never
 * committed. A start time below the floor: unknown. `aborted`: an ABORTED version was found.
 */
import type { HybridTime } from '../../common/hybrid-time';
import type { TxnId } from '../../common/ids';
import type { DocDbApi } from '../../docdb';
import { decodeRecordRow, RECORD_COLUMN_ID, recordKey, type TxnRecord } from '../tablet/participant/txn-record';

export async function recordHistory(db: Pick<DocDbApi, 'historyFloor' | 'rowVersions'>, txnId: TxnId, startHt: HybridTime): Promise<{ committedAt?: HybridTime; neverCommitted: boolean; aborted: boolean }> {
  const floor = db.historyFloor();
  let aborted = false;
  for (const v of await db.rowVersions(recordKey(txnId))) {
    if (v.sub.kind !== 'column' || v.sub.id !== RECORD_COLUMN_ID || v.value.type !== 'primitive' || !(v.value.value instanceof Uint8Array)) continue;
    let rec: TxnRecord;
    try {
      rec = decodeRecordRow(txnId, v.value.value);
    } catch {
      continue; // not a record this version understands: proves nothing
    }
    if (rec.status === 'COMMITTED') return { committedAt: rec.commitHt, neverCommitted: false, aborted };
    if (rec.status === 'ABORTED') aborted = true;
  }
  return { neverCommitted: aborted || startHt >= floor, aborted };
}
