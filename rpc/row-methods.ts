/**
 * RowService (rpc/protos/rows.proto): atomic row operations and row locks of one tablet, with the
 * TypeScript shapes of its messages as rpc/proto.ts decodes them (see service-methods.ts).
 */
import { defineMethod } from './proto';
import { lockRowRequestCodec, mutateRowsRequestCodec, mutateRowsResponseCodec, rowLockRequestCodec, rowLockResponseCodec } from './row-codec';
import type { MethodDef } from './types';
import type { DocKeyPB, RowPB, ValuePB } from './service-methods';

export const ROW_SERVICE = 'tessera.RowService';

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

export interface RowMethods {
  mutateRows: MethodDef<MutateRowsRequestPB, MutateRowsResponsePB>;
  lockRow: MethodDef<LockRowRequestPB, RowLockResponsePB>;
  /** RENEW or UNLOCK of a held lock. */
  rowLock: MethodDef<RowLockRequestPB, RowLockResponsePB>;
}

let rows: RowMethods | undefined;

/** The methods with the hand-written codecs of rpc/row-codec.ts (the protobufjs ones: protoRowMethods). */
export function rowMethods(): RowMethods {
  rows ??= {
    mutateRows: { service: ROW_SERVICE, method: 'MutateRows', req: mutateRowsRequestCodec, resp: mutateRowsResponseCodec },
    lockRow: { service: ROW_SERVICE, method: 'LockRow', req: lockRowRequestCodec, resp: rowLockResponseCodec },
    rowLock: { service: ROW_SERVICE, method: 'RowLock', req: rowLockRequestCodec, resp: rowLockResponseCodec },
  };
  return rows;
}

/** The same methods with rpc/proto.ts's protobufjs codecs: the reference the hand-written ones are tested against (test/unit/row-codec.test.ts). */
export function protoRowMethods(): RowMethods {
  return {
    mutateRows: defineMethod(ROW_SERVICE, 'MutateRows', 'MutateRowsRequestPB', 'MutateRowsResponsePB'),
    lockRow: defineMethod(ROW_SERVICE, 'LockRow', 'LockRowRequestPB', 'RowLockResponsePB'),
    rowLock: defineMethod(ROW_SERVICE, 'RowLock', 'RowLockRequestPB', 'RowLockResponsePB'),
  };
}
