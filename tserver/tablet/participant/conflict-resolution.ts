/**
 * Write-write conflict resolution for a transactional write (snapshot isolation; fail-on-conflict,
 * or with `wait` — enable_wait_queues — wait-on-conflict by wound-wait):
 * - a version committed after our read time (RegularDB, or another txn committed at a later time):
 *   TXN_CONFLICT — first committer wins;
 * - an aborted transaction's intent: ignored (its intents are queued for cleanup);
 * - a pending transaction's intent: the higher priority wins — we abort it through its status tablet,
 *   or fail with TXN_CONFLICT ourselves.
 */
import { DbError, ErrorCode } from '../../../common/errors';
import type { HybridTime } from '../../../common/hybrid-time';
import type { TxnId } from '../../../common/ids';
import type { Conflict, TxnMeta } from '../../../docdb';
import type { PeerTxnEnv, TxnStatusInfo } from './txn-env';

export interface ConflictDeps {
  env: PeerTxnEnv;
  /** The status tablet of another txn whose intents this replica holds. */
  statusTabletOf(txnId: TxnId): string | undefined;
  /** Committed/aborted outcome this replica already applied, if any. */
  localOutcome(txnId: TxnId): TxnStatusInfo | undefined;
  queueCleanup(txnId: TxnId): void;
}

/**
 * Thrown by conflict resolution in wait-on-conflict mode: the operation must wait for these pending
 * transactions (which outrank it) to finish, then try again. Not a DbError: it never leaves the tablet.
 */
export class BlockedBy extends Error {
  constructor(readonly blockers: readonly TxnId[]) {
    super(`blocked by ${blockers.join(', ')}`);
  }
}

/**
 * The rank that decides conflicts: priority, then transaction id (a total order, so under
 * wait-on-conflict every wait goes to a higher rank and no cycle of waits — no deadlock — can form).
 */
export function outranks(a: { priority: number; txnId: TxnId }, b: { priority: number; txnId: TxnId }): boolean {
  return a.priority > b.priority || (a.priority === b.priority && a.txnId > b.txnId);
}

/**
 * Other transactions one write resolves at most by RPC (bounds the fan-out); those whose fate is
 * already known here (applied or removed on this tablet, or a cached final answer) do not count: a
 * hot row collects the intents of many aborted transactions until the sweep removes them.
 */
const CONFLICTING_TXNS_MAX = 64;

function conflict(msg: string, details: Record<string, unknown> = {}): DbError {
  return new DbError(ErrorCode.TXN_CONFLICT, msg, details);
}

export async function resolveConflicts(txn: TxnMeta, readHt: HybridTime, conflicts: readonly Conflict[], deps: ConflictDeps, wait = false): Promise<void> {
  const others = new Set<TxnId>();
  for (const c of conflicts) {
    if (c.type === 'committedAfterRead') throw conflict(`txn ${txn.txnId}: a version committed at ${c.commitHt} after the read time ${readHt}`, { commitHt: c.commitHt.toString() });
    if (c.txnId !== txn.txnId) others.add(c.txnId);
  }
  // First committer wins: a transaction committed after our read time fails us at once.
  await settleOthers(txn, others, readHt, deps, wait, (other, commitHt) => {
    if (commitHt > readHt) throw conflict(`txn ${txn.txnId}: txn ${other} committed at ${commitHt} after our read time ${readHt}`, { otherTxnId: other });
  });
}

/**
 * Conflict resolution for a serializable transaction's write or read lock (YugabyteDB's
 * serializable isolation: reads take read intents, so the transaction never needs a snapshot to
 * compare committed versions with). Pending transactions: the higher priority wins, as above;
 * aborted: ignored; committed (applied or not): this operation orders after it — the returned
 * hybrid time is the largest such commit time, and the caller moves its clock past it before it
 * picks the operation's time, so a read at that time sees the committed versions.
 */
export async function resolveSerializableConflicts(txn: TxnMeta, nowHt: HybridTime, conflicts: readonly Conflict[], deps: ConflictDeps, wait = false): Promise<HybridTime> {
  const others = new Set<TxnId>();
  let after: HybridTime = 0n;
  for (const c of conflicts) {
    if (c.type === 'committedAfterRead') {
      if (c.commitHt > after) after = c.commitHt;
    } else if (c.txnId !== txn.txnId) others.add(c.txnId);
  }
  await settleOthers(txn, others, nowHt, deps, wait, (_, commitHt) => {
    if (commitHt > after) after = commitHt;
  });
  return after;
}

/**
 * Settle the conflicting transactions `others`: a pending one is aborted when we outrank it (wound),
 * else we fail with TXN_CONFLICT — or, waiting, it is a blocker (BlockedBy is thrown once all are
 * seen); an aborted one is queued for cleanup; a committed one goes to `onCommitted` (which may throw).
 */
async function settleOthers(txn: TxnMeta, others: ReadonlySet<TxnId>, statusAt: HybridTime, deps: ConflictDeps, wait: boolean, onCommitted: (txnId: TxnId, commitHt: HybridTime) => void): Promise<void> {
  let unknown = 0;
  for (const o of others) if (!deps.localOutcome(o) && !deps.env.known?.(o)) unknown++;
  if (unknown > CONFLICTING_TXNS_MAX) throw conflict(`txn ${txn.txnId}: conflicts with ${unknown} transactions of unknown outcome`);
  const blockers: TxnId[] = [];
  for (const other of others) {
    let st = deps.localOutcome(other);
    const statusTablet = deps.statusTabletOf(other);
    if (!st) {
      if (!statusTablet) throw conflict(`txn ${txn.txnId}: conflicting txn ${other} has no known status tablet`);
      st = await deps.env.getStatus(other, statusTablet, statusAt);
    }
    if (st.status === 'PENDING') {
      const pending = pendingOutcome(txn, other, st.priority, wait);
      if (pending === 'wait') {
        blockers.push(other);
        continue;
      }
      if (pending === 'wound' && statusTablet) st = await deps.env.abort(other, statusTablet);
      else throw conflict(`txn ${txn.txnId}: conflicts with pending txn ${other} of higher or equal priority`, { otherTxnId: other });
    }
    if (st.status === 'ABORTED') {
      deps.queueCleanup(other);
      continue;
    }
    if (st.status === 'PENDING') throw conflict(`txn ${txn.txnId}: conflicting txn ${other} is still pending`, { otherTxnId: other });
    onCommitted(other, st.commitHt);
  }
  if (blockers.length > 0) throw new BlockedBy(blockers);
}

/**
 * What to do about a pending conflicting transaction: abort it (wound) when we have the higher
 * priority; otherwise fail (fail-on-conflict, ties fail too) or, waiting, wait unless we outrank it
 * by (priority, id).
 */
function pendingOutcome(txn: TxnMeta, other: TxnId, otherPriority: number, wait: boolean): 'wound' | 'wait' | 'fail' {
  if (!wait) return txn.priority > otherPriority ? 'wound' : 'fail';
  return outranks(txn, { priority: otherPriority, txnId: other }) ? 'wound' : 'wait';
}

/**
 * A plain (non-transactional, single-tablet) write meets other transactions' intents on its keys
 * (tessera's rule, after YugabyteDB's single-shard operations, which resolve conflicts like a
 * transaction of the highest priority):
 * - committed (applied or not): the write orders after it — the returned hybrid time is the
 *   largest such commit time, and the caller stamps the write above it;
 * - aborted: ignored (queued for cleanup);
 * - pending: the write wins — it aborts the transaction through its status tablet (a committed
 *   answer means the commit won the race: order after it). If the outcome cannot be settled, the
 *   write fails with TXN_CONFLICT, marked retryable: nothing was written.
 * A plain write therefore never slips under a pending transaction's intent (which would let that
 * transaction commit over a write it never saw: a lost update).
 */
export async function resolvePlainWriteConflicts(conflicts: readonly Conflict[], nowHt: HybridTime, deps: ConflictDeps): Promise<HybridTime> {
  const others = new Set<TxnId>();
  for (const c of conflicts) if (c.type === 'intent') others.add(c.txnId);
  const retryable = (msg: string, details: Record<string, unknown> = {}): DbError => new DbError(ErrorCode.TXN_CONFLICT, msg, details, { retryable: true });
  let unknown = 0;
  for (const o of others) if (!deps.localOutcome(o) && !deps.env.known?.(o)) unknown++;
  if (unknown > CONFLICTING_TXNS_MAX) throw retryable(`write conflicts with ${unknown} transactions of unknown outcome`);
  let after: HybridTime = 0n;
  for (const other of others) {
    let st = deps.localOutcome(other);
    const statusTablet = deps.statusTabletOf(other);
    if (!st) {
      if (!statusTablet) throw retryable(`write conflicts with txn ${other} whose status tablet is unknown`, { otherTxnId: other });
      st = await deps.env.getStatus(other, statusTablet, nowHt);
    }
    if (st.status === 'PENDING' && statusTablet) st = await deps.env.abort(other, statusTablet);
    if (st.status === 'ABORTED') {
      deps.queueCleanup(other);
      continue;
    }
    if (st.status === 'PENDING') throw retryable(`write conflicts with pending txn ${other}`, { otherTxnId: other });
    if (st.commitHt > after) after = st.commitHt;
  }
  return after;
}
