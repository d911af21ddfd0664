/**
 * RowService (rpc/protos/rows.proto): atomic row operations and row locks of one tablet, with the
 * TypeScript shapes of its messages as rpc/proto.ts decodes them (see service-methods.ts).
 */
import { defineMethod } from './proto';
import { lockRowRequestCodec, mutateRowsRequestCodec, mutateRowsResponseCodec, rowLockRequestCodec, rowLockResponseCodec } from './row-codec';
import type { MethodDef } from './types';
import type { LockRowRequestPB, MutateRowsRequestPB, MutateRowsResponsePB, RowLockRequestPB, RowLockResponsePB } from './row-types';

export type { RowConditionPB, CellMutationPB, RowMutationPB, MutateRowsRequestPB, MutateRowsItemPB, MutateRowsResponsePB, MutateRowsResultPB, LockRowRequestPB, LockRowItemPB, RowLockRequestPB, RowLockItemPB, RowLockResponsePB, RowLockResultPB } from './row-types';

export const ROW_SERVICE = 'tessera.RowService';

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
