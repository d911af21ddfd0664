/**
 * The TypeScript shapes of RowService's messages (rpc/protos/rows.proto) as rpc/proto.ts decodes them
 * and rpc/row-codec.ts encodes them; rpc/row-methods.ts defines the service.
 */
import type { DocKeyPB, RowPB, ValuePB } from './service-methods';

export interface RowConditionPB {
  columnId?: number;
  op?: string;
  value?: ValuePB;
}
export interface CellMutationPB {
  type?: string;
  columnId?: number;
  value?: ValuePB;
  by?: bigint;
}
export interface RowMutationPB {
  key?: DocKeyPB;
  conditions?: RowConditionPB[];
  mutations?: CellMutationPB[];
  lockId?: string;
  lockToken?: bigint;
  unlockAfter?: boolean;
}
export interface MutateRowsRequestPB {
  tabletId?: string;
  rows?: RowMutationPB[];
  schemaVersion?: number;
  propagatedHt?: bigint;
  clientId?: string;
  requestId?: bigint;
  minRunningRequestId?: bigint;
  waitForLocks?: boolean;
  /** Further calls to the same tablet coalesced by the client, each handled on its own. */
  more?: MutateRowsItemPB[];
}
export interface MutateRowsItemPB {
  rows?: RowMutationPB[];
  requestId?: bigint;
}
export interface MutateRowsResponsePB {
  applied?: boolean;
  writeHt?: bigint;
  propagatedHt?: bigint;
  results?: RowPB[];
  /** With `more`: one outcome per call (the first, then `more` in order). */
  items?: MutateRowsResultPB[];
}
export interface MutateRowsResultPB {
  applied?: boolean;
  writeHt?: bigint;
  results?: RowPB[];
  /** Non-empty: the call failed with this code (details_json: its details). */
  code?: string;
  message?: string;
  detailsJson?: string;
}
export interface LockRowRequestPB {
  tabletId?: string;
  key?: DocKeyPB;
  leaseMs?: number;
  holder?: string;
  lockId?: string;
  wait?: boolean;
  schemaVersion?: number;
  propagatedHt?: bigint;
  /** Further (non-waiting) lockRow calls to the same tablet coalesced by the client. */
  more?: LockRowItemPB[];
}
export interface LockRowItemPB {
  key?: DocKeyPB;
  leaseMs?: number;
  holder?: string;
  lockId?: string;
}
export interface RowLockRequestPB {
  tabletId?: string;
  key?: DocKeyPB;
  lockId?: string;
  action?: string;
  leaseMs?: number;
  schemaVersion?: number;
  propagatedHt?: bigint;
  /** Further RENEW/UNLOCK calls to the same tablet coalesced by the client. */
  more?: RowLockItemPB[];
}
export interface RowLockItemPB {
  key?: DocKeyPB;
  lockId?: string;
  action?: string;
  leaseMs?: number;
}
export interface RowLockResponsePB {
  lockId?: string;
  token?: bigint;
  expiresHt?: bigint;
  leaseMs?: number;
  propagatedHt?: bigint;
  /** With `more`: one outcome per call (the first, then `more` in order). */
  items?: RowLockResultPB[];
}
export interface RowLockResultPB {
  lockId?: string;
  token?: bigint;
  expiresHt?: bigint;
  leaseMs?: number;
  /** Non-empty: the call failed with this code (details_json: its details). */
  code?: string;
  message?: string;
  detailsJson?: string;
}
