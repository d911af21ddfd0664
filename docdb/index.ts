/** docdb/ public surface: engines, the DocDB of a tablet replica, and its API types. */
export * from './kv-engine';
export * from './doc-db-api';
export { MemoryEngine } from './memory-engine';
export { RocksDbEngine, type RocksDbEngineOptions } from './rocksdb-engine';
export { DocDb, type DocDbDeps, type DocDbOptions } from './doc-db';
export type { ApplyHooks } from './apply';
export type { GcResult } from './gc';
export type { ApplyState } from './txn-records';
export { TXN_MAX_APPLY_BATCH_RECORDS, TIMESTAMP_HISTORY_RETENTION_INTERVAL_SEC } from './docdb-flags';
export { compareOpId, OP_ID_ZERO } from './frontier';
export * from './content-checksum';
export * from './encoding';
export * from './docdb-flags';
export type { BackgroundWork } from './rocksdb-stats';
export { encodeRowDocKey, encodeStored, hashKeyLockOfRange } from './storage-keys';
