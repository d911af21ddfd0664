/**
 * The single-tablet fast path (YugabyteDB's fast path for single-shard transactions, TiKV's 1PC;
 * docs/transactions.md "Single-tablet fast path"): a transaction whose writes all fall in one tablet
 * and that holds no locks anywhere commits as ONE plain WRITE entry of that tablet, straight into
 * RegularDB — no intents, no APPLY, no COMMITTED record on a status tablet.
 *
 * The rules stay the distributed path's, checked here under the write's row locks before the entry
 * is proposed: the write set meets other transactions' intents and every version committed after the
 * transaction's read time exactly as WRITE_INTENTS would (findConflicts + resolveConflicts: a version
 * committed after the read time, or a transaction committed after it, fails TXN_CONFLICT — first
 * committer wins; a pending one is settled by priority). Serializable transactions reach the fast
 * path only without read locks (the client sends it only when the transaction took none), so the
 * write orders after committed conflicting transactions, as a serializable write would. Once this
 * check passed, the entry's hybrid time is above the read time and above every committed conflicting
 * transaction (the plain write's own orderAfterIntents moves the clock past them), and the row locks
 * keep any other write of these keys out until the entry is applied: what the distributed path's
 * intents would have guaranteed between the write and the commit holds for the one entry that is both.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { HybridClock } from '../../common/hybrid-clock';
import type { HybridTime } from '../../common/hybrid-time';
import { Isolation, type DocDbApi, type RowOp, type TxnMeta } from '../../docdb';
import { resolveConflicts, resolveSerializableConflicts, type ConflictDeps } from './participant/conflict-resolution';

/** The transaction a fast-path write commits (WriteRequest.fastPathTxn). */
export interface FastPathTxn {
  txn: TxnMeta;
  /**
   * The transaction's read time: a version of a written key committed after it is a conflict.
   * Undefined: the transaction never read (no status record, client/transaction.ts), so its read time
   * is the tablet's clock under the write's row locks, as for a plain single-row write (YugabyteDB's
   * single-shard operations): only pending transactions' intents can conflict then.
   */
  readHt?: HybridTime;
}

export interface FastPathDeps {
  docdb: DocDbApi;
  clock: HybridClock;
  tabletId: string;
  /** Absent on a replica without transaction support: any conflict then fails the write. */
  conflictDeps: ConflictDeps | undefined;
}

/**
 * Check the fast-path write `ops` of `f.txn` for conflicts (under the caller's row locks); throws
 * TXN_CONFLICT (nothing written) when the transaction cannot commit. Fail-on-conflict: a pending
 * transaction that outranks this one fails it at once (the client runs the transaction again), even
 * under enable_wait_queues — the fast path holds no intents to wait with.
 */
export async function checkFastPathConflicts(d: FastPathDeps, f: FastPathTxn, ops: readonly RowOp[]): Promise<void> {
  // Without a read of its own (serializable, or no read time at all), the write simply orders after
  // every committed conflicting transaction, as a serializable or a plain write does: only a pending
  // one can fail it. (A commit time from another status tablet's clock may be ahead of this clock.)
  const ordersAfter = f.txn.isolation === Isolation.SERIALIZABLE || f.readHt === undefined;
  const readHt = ordersAfter || f.readHt === undefined ? d.clock.now() : f.readHt;
  const conflicts = await d.docdb.findConflicts(f.txn, ops, readHt);
  if (conflicts.length === 0) return;
  if (!d.conflictDeps) throw new DbError(ErrorCode.TXN_CONFLICT, `tablet ${d.tabletId}: conflicting transaction`);
  if (ordersAfter) {
    const after = await resolveSerializableConflicts(f.txn, d.clock.now(), conflicts, d.conflictDeps, false);
    if (after > 0n) d.clock.update(after);
    return;
  }
  await resolveConflicts(f.txn, readHt, conflicts, d.conflictDeps, false);
}
