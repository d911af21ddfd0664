/** Public API of the client library. */
export { TesseraClient, DEFAULT_TIMEOUT_MS } from './tessera-client';
export { Table } from './table';
export type * from './client-types';
export { Transaction, type TransactionOptions, type CommitResult, type IsolationLevel, type TransactionState } from './transaction';
export type { RowCheck, RowCheckOp, RowLock, RowMutationSpec, RowOpOptions, MutateRowsResult } from './row-ops';
export { Percolator, PercolatorTransaction, PercolatorTable, type PercolatorTxnOptions } from './percolator';
export { TimestampClient } from './timestamp-client';
