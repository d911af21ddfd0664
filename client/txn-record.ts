/**
 * A transaction's record on a status tablet (CreateTransaction): its id, tablet and read time. A
 * transaction begun with `deferWrites` creates it lazily, at its first need (client/transaction.ts).
 */
import { randomBytes } from 'node:crypto';
import { DbError, ErrorCode } from '../common/errors';
import { txnCoordinatorMethods } from '../rpc';
import type { Deadline } from './retry-policy';
import type { StatusTabletProxy } from './status-tablet-proxy';
import type { TabletInvoker } from './tablet-invoker';

/** Codes after which a write's outcome is unknown (its intents may or may not be there). */
export const UNKNOWN_OUTCOME_CODES: ReadonlySet<string> = new Set<string>([ErrorCode.NETWORK_ERROR, ErrorCode.TIMED_OUT, ErrorCode.SHUTTING_DOWN, ErrorCode.INTERNAL]);

/** 32 hex digits (a 128-bit id, like YugabyteDB's TransactionId UUID without dashes). */
export function newTxnId(): string {
  return randomBytes(16).toString('hex');
}

export interface RecordDeps {
  statusTablets: StatusTabletProxy;
  invoker: TabletInvoker;
}

/** CreateTransaction on a status tablet (first with `firstTxnId`): the record's id, tablet and read time. */
export async function createTxnRecord(deps: RecordDeps, isolation: string, priority: number, firstTxnId: string, d: Deadline): Promise<{ txnId: string; statusTablet: string; readHt: bigint; globalLimitHt: bigint | undefined }> {
  let statusTablet: string;
  let txnId = '';
  let r: { readHt?: bigint; propagatedHt?: bigint; globalLimitHt?: bigint };
  for (;;) {
    statusTablet = await deps.statusTablets.pickTablet(d);
    // A fresh id per attempt: if CreateTransaction's outcome is unknown (one attempt waits at most
    // rpcSingleCallTimeoutMs: the status tablet's leader may hang), the orphan record (without
    // intents) simply expires on the coordinator, and the transaction begins again, likely on
    // another status tablet. (Nothing was sent under the id yet: a lazily created record may change it too.)
    txnId = txnId === '' ? firstTxnId : newTxnId();
    try {
      r = await deps.statusTablets.call(statusTablet, txnCoordinatorMethods().createTransaction, { statusTablet, txnId, isolation, priority, propagatedHt: deps.invoker.propagatedHt }, d, false, true);
      break;
    } catch (e) {
      const err = DbError.from(e);
      if (!UNKNOWN_OUTCOME_CODES.has(err.code) || err.code === ErrorCode.INTERNAL || d.expired()) throw err;
    }
  }
  deps.invoker.observeHt(r.propagatedHt);
  if (!r.readHt) throw new DbError(ErrorCode.INTERNAL, `CreateTransaction of ${txnId} answered without a read time`);
  const limit = r.globalLimitHt ? BigInt(r.globalLimitHt) : 0n;
  return { txnId, statusTablet, readHt: BigInt(r.readHt), globalLimitHt: limit > BigInt(r.readHt) ? limit : undefined };
}
