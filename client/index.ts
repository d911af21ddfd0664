/** Public API of the client library. */
export { TesseraClient, DEFAULT_TIMEOUT_MS } from './tessera-client';
export { Table } from './table';
export type * from './client-types';
export { Transaction, type TransactionOptions, type CommitResult, type IsolationLevel, type TransactionState } from './transaction';
export type { RowCheck, RowCheckOp, RowLock, RowMutationSpec, RowOpOptions, MutateRowsResult } from './row-ops';
export { Percolator, PercolatorTransaction, PercolatorTable, type PercolatorTxnOptions } from './percolator';
export { TimestampClient } from './timestamp-client';
export { toHybridTime, type CellTime, type CellPut, type CellDelete, type CellReadOptions, type CellResult, type CellRowResult } from './cells';
export { parseFamilySpec, familyAttributes, DEFAULT_FAMILY } from '../common/column-families';
