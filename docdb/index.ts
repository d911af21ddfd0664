/**
 * docdb/ public surface: engines, the DocDB of a tablet replica, its API types, its flags and the key
 * encoding (docdb/encoding/). Other folders import docdb/ only through this file.
 */
export * from './kv-engine';
export * from './doc-db-api';
export { MemoryEngine } from './memory-engine';
export { RocksDbEngine, type RocksDbEngineOptions, type WalAside } from './rocksdb-engine';
export { RangeHidingEngine, type KeySegment } from './range-hiding-engine';
export { cloneCheckpoint, type CheckpointResult } from './rocksdb-checkpoint';
export { walOpGroups, WalFormatError, type WalOp } from './rocksdb-wal';
export { DocDb, type DocDbDeps, type DocDbOptions } from './doc-db';
export type { ApplyHooks } from './apply';
export type { GcResult } from './gc';
export type { ApplyState } from './txn-records';
export { compareOpId, OP_ID_ZERO } from './frontier';
export * from './content-checksum';
export * from './encoding';
export * from './docdb-flags';
export type { BackgroundWork } from './rocksdb-stats';
export { encodeRowDocKey, encodeStored, hashKeyLockOfRange } from './storage-keys';
export * from './cell-versions';
export { readCellRows, rowCells, cellEntryOf, CELL_READ_ROWS_MAX, CELL_READ_CELLS_MAX, } from './cell-reader';
export { PUT_AT_TS_WRITE_ID, MARKER_WRITE_ID, VERSION_MARKER_WRITE_ID } from './row-cells';
export * from './filters';
