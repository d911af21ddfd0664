/** Settling a transaction commit whose answer was lost (transaction.ts's commit). */
import { DbError, ErrorCode } from '../common/errors';
import { txnCoordinatorMethods } from '../rpc';
import type { Deadline } from './retry-policy';
import type { StatusTabletProxy } from './status-tablet-proxy';
import { UNKNOWN_OUTCOME_CODES } from './txn-record';

/** The CommitTransaction request of one transaction (resent while its status is PENDING). */
export interface CommitRequest {
  statusTablet: string;
  txnId: string;
  participantTablets: string[];
  propagatedHt: bigint;
}

/**
 * The commit's answer was lost: ask for the status; resend the commit only while it is PENDING.
 * ABORTED alone is ambiguous: a status tablet forgets a committed transaction once every participant
 * applied it, and an id it does not know reads ABORTED. The request carries the transaction's start
 * time, and the status tablet says when ABORTED is definite (`neverCommitted`: its record says so, or
 * it has no record and would remember the transaction had it committed and been forgotten since it
 * started — a commit that reached only a paused leader holding the record alone). Then the commit
 * fails with TXN_ABORTED; otherwise ABORTED stays "outcome unknown" (TIMED_OUT with
 * details.outcome = 'unknown').
 */
export async function settleUnknownCommit(statusTablets: StatusTabletProxy, req: CommitRequest, startHt: bigint, d: Deadline, first: DbError): Promise<bigint> {
const txnId = req.txnId;
  const m = txnCoordinatorMethods();
  const statusTablet = req.statusTablet;
  let last = first;
  const unknown = (why: string): DbError =>
    new DbError(ErrorCode.TIMED_OUT, `commit of transaction ${txnId}: outcome unknown (${why})`, { outcome: 'unknown', txnId: txnId }, { retryable: false });
  let resendRefused: DbError | undefined;
  for (let attempt = 0; attempt < 50 && !d.expired(); attempt++) {
    try {
      const s = await statusTablets.call(statusTablet, m.getTransactionStatus, { statusTablet, txnIds: [txnId], readHt: 0n, startHts: [startHt] }, d, true);
      const st = s.statuses?.find((x) => x.txnId === txnId) ?? s.statuses?.[0];
      if (st?.status === 'COMMITTED' && st.commitHt) return BigInt(st.commitHt);
      if (st?.status === 'ABORTED' && st.neverCommitted) {
        throw new DbError(ErrorCode.TXN_ABORTED, `transaction ${txnId} did not commit: its commit's answer was lost (${first.code}) and the status tablet proves it never committed`, { txnId: txnId, outcome: 'aborted' });
      }
      if (st?.status === 'ABORTED') throw unknown(resendRefused ? `the resent commit answered ${resendRefused.code}` : 'the status tablet reports it ABORTED or no longer knows it');
      if (resendRefused) throw unknown(`the resent commit answered ${resendRefused.code}, then the status tablet reported ${st?.status ?? 'nothing'}`);
      // PENDING: the COMMITTED entry is not (or not yet) applied; a resend is safe because the
      // coordinator answers a commit of a committed transaction with its commit time.
      const r = await statusTablets.call(statusTablet, m.commitTransaction, req, d, false, true);
      return BigInt(r.commitHt ?? 0n);
    } catch (e) {
      const err = DbError.from(e);
      if (err.details['outcome'] === 'unknown' || err.details['outcome'] === 'aborted') throw err;
      // The resend found no (or an aborted) record: ask once more whether that is definite.
      if ((err.code === ErrorCode.TXN_ABORTED || err.code === ErrorCode.TXN_NOT_FOUND) && !resendRefused) {
        resendRefused = err;
        continue;
      }
      if (err.code === ErrorCode.TXN_ABORTED || err.code === ErrorCode.TXN_NOT_FOUND) throw unknown(`the resent commit answered ${err.code}`);
      if (!UNKNOWN_OUTCOME_CODES.has(err.code)) throw err;
      last = err;
    }
  }
  throw d.timedOut(`commit of transaction ${txnId} (outcome unknown)`, last);
}
