/** Percolator transactions over tessera tables (docs/percolator.md). */
export { Percolator, type PercolatorHost } from './percolator';
export { PercolatorTransaction, PercolatorTable, DEFAULT_LOCK_TTL_MS, type PercolatorTxnOptions, type PercolatorTxnState } from './percolator-txn';
export { SEQ_COLUMN, STATE_COLUMN, WRITE_RETENTION_MS, WRITES_KEPT_MIN } from './row-state';
export { ObserverRunner, NOTIFY_ROWS_PER_PASS_MAX, type Observer, type PassResult } from './observer-runner';
export { NOTIFY_COLUMN, OBSERVED_PREFIX } from './row-state';
