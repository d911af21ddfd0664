/**
 * What a tablet replica tells the component that owns its applied state beyond DocDB — a status
 * tablet's transaction coordinator (docs/architecture.md §Tablet). The coordinator depends on the
 * tablet through this one interface (TabletPeer.attachEvents); the tablet never imports it.
 */
import type { LeaderChange } from '../../raft';
import type { TabletOp } from './tablet-op';

/** A TXN_STATUS entry as applied on this replica. */
export type TxnStatusOp = Extract<TabletOp, { type: 'TXN_STATUS' }>;

export interface TabletEvents {
  /** A TXN_STATUS entry was applied on this replica (in log order). */
  txnStatusApplied?(op: TxnStatusOp): void;
  /**
   * A remote bootstrap replaced this replica's databases (awaited before it serves again): state
   * kept in memory from applied entries must be rebuilt from them, since the snapshot's entries were
   * never applied here.
   */
  snapshotInstalled?(): Promise<void>;
  /** This replica's role or term changed. */
  leaderChanged?(c: LeaderChange): void;
  /** Before this leader hands leadership away on request (a status tablet makes its leader-only records durable). */
  beforeLeaderTransfer?(): Promise<void>;
}
