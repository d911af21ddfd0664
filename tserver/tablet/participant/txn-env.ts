/**
 * What a tablet replica needs from the tserver's transaction machinery (status lookups and aborts go
 * over RPC to other tablets' leaders). Kept in its own file so tablet/ and transaction/ do not import
 * each other in a cycle.
 */
import type { HybridTime } from '../../../common/hybrid-time';
import type { TxnId } from '../../../common/ids';

export type TxnStatusInfo =
  | { status: 'COMMITTED'; commitHt: HybridTime; priority: number }
  | { status: 'PENDING'; priority: number }
  | { status: 'ABORTED'; priority: number };

export interface PeerTxnEnv {
  /** The fate of `txnId` as its status tablet sees it (final answers are cached). */
  getStatus(txnId: TxnId, statusTablet: string, readHt: HybridTime): Promise<TxnStatusInfo>;
  /**
   * Ask the status tablet to abort `txnId` (a higher-priority writer wins); the resulting status.
   * `participant`: the tablet that met its intents, so the coordinator has them removed there at once.
   */
  abort(txnId: TxnId, statusTablet: string, participant?: string): Promise<TxnStatusInfo>;
  /** A final answer (COMMITTED / ABORTED) already known without an RPC, if any. */
  known?(txnId: TxnId): TxnStatusInfo | undefined;
}
