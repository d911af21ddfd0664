/**
 * What a status tablet's coordinator (coordinator.ts) answers besides its records: the console's row
 * per transaction, the error for an id it does not know, and the isolation a request names.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { HybridTime } from '../../common/hybrid-time';
import { Isolation } from '../../docdb';

export interface TxnInfo {
  txnId: string;
  status: string;
  isolation: string;
  startHt: HybridTime;
  commitHt: HybridTime;
  ageMs: number;
  participants: string[];
  lastHeartbeatMsAgo: number;
  /** False while the record exists on this leader only (created, not yet committed/aborted/heartbeated). */
  replicated: boolean;
  /** Participants that did not acknowledge APPLY/REMOVE yet (leader only). */
  unacked: string[];
}

export function notFound(id: string): DbError {
  return new DbError(ErrorCode.TXN_ABORTED, `transaction ${id} is not known to its status tablet (aborted or expired)`);
}

/** The isolation of a new transaction or of a request inside one (absent: snapshot). */
export function parseIsolation(s: string | undefined): Isolation {
  if (!s || s === 'snapshot') return Isolation.SNAPSHOT;
  if (s === 'serializable') return Isolation.SERIALIZABLE;
  throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown isolation '${s}' (snapshot | serializable)`);
}
