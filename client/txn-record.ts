/**
 * A transaction's record on a status tablet (CreateTransaction): its id, tablet and read time. A
 * transaction begun with `deferWrites` creates it lazily, at its first need (client/transaction.ts).
 */
import { randomBytes } from 'node:crypto';
import { DbError, ErrorCode } from '../common/errors';
import { htFrom } from '../common/hybrid-time';
import { encodeLazyTxnId } from '../common/lazy-txn-id';
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
  /** The client's wall clock in µs (tests); default the system's. */
  wallMicros?: () => number;
}

/** A transaction's record as begin sees it; `lazy`: none yet, the id carries what it needs (common/lazy-txn-id.ts). */
export interface TxnRecordInfo {
  txnId: string;
  statusTablet: string;
  readHt: bigint;
  globalLimitHt: bigint | undefined;
  lazy: boolean;
}

/** How long a CreateTransaction answer's permission to start lazily holds before the client asks again (the flag is runtime). */
export const LAZY_START_RECHECK_MS = 10_000;

/**
 * Begin without CreateTransaction when the last answer allowed it (txn_lazy_status_record): the read
 * time is the client's hybrid time — its wall clock, but never below a time it has seen from a
 * server (so it reads its own commits) — and the uncertainty window the server's, learned from that
 * answer. Undefined: ask with CreateTransaction.
 */
async function lazyStart(deps: RecordDeps, isolation: string, priority: number, d: Deadline): Promise<TxnRecordInfo | undefined> {
  const allowed = deps.statusTablets.lazyStart;
  if (!allowed || performance.now() - allowed.learnedAtMs > LAZY_START_RECHECK_MS) return undefined;
  if (isolation !== 'snapshot' && isolation !== 'serializable') return undefined;
  const statusTablet = await deps.statusTablets.pickTablet(d);
  const wall = htFrom(Math.max(0, (deps.wallMicros ?? defaultWallMicros)()));
  const readHt = wall > deps.invoker.propagatedHt ? wall : deps.invoker.propagatedHt + 1n;
  // The commit's hybrid time must come after the read time: the commit carries propagatedHt.
  deps.invoker.observeHt(readHt);
  const txnId = encodeLazyTxnId({ startHt: readHt, priority, isolation }, randomBytes(8).toString('hex'));
  return { txnId, statusTablet, readHt, globalLimitHt: allowed.skewHt > 0n ? readHt + allowed.skewHt : undefined, lazy: true };
}

function defaultWallMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

/** CreateTransaction on a status tablet (first with `firstTxnId`): the record's id, tablet and read time. */
export async function createTxnRecord(deps: RecordDeps, isolation: string, priority: number, firstTxnId: string, d: Deadline): Promise<TxnRecordInfo> {
  const lazy = await lazyStart(deps, isolation, priority, d);
  if (lazy) return lazy;
  let statusTablet: string;
  let txnId = '';
  let r: { readHt?: bigint; propagatedHt?: bigint; globalLimitHt?: bigint; lazyRecords?: boolean };
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
  const readHt = BigInt(r.readHt);
  deps.statusTablets.lazyStart = r.lazyRecords === true ? { learnedAtMs: performance.now(), skewHt: limit > readHt ? limit - readHt : 0n } : undefined;
  return { txnId, statusTablet, readHt, globalLimitHt: limit > readHt ? limit : undefined, lazy: false };
}
