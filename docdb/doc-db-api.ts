/**
 * What a tablet (tserver/tablet) needs from DocDB. DocDB knows nothing of Raft: it receives op ids
 * (term, index) only to record them as the frontier of each write batch, so a restart knows where
 * to resume replaying the Raft log, and replay is idempotent.
 */
import type { HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import { Isolation, type DocKey, type Primitive } from './encoding/types';
import type { CellReadOptions, CellReadResult, CellRules } from './cell-versions';
import type { CellFilter } from './filters/evaluator';

export { Isolation, type DocKey, type Primitive };

export interface OpId {
  term: number;
  index: number;
}

export interface ColumnWrite {
  columnId: number;
  /** null stores a tombstone for that column (the column reads as null). */
  value: Primitive;
  /**
   * A string value's UTF-8 bytes, when the column was read from a log entry with a large string
   * (tserver/tablet/tablet-op-rows.ts): `value` is then a getter that decodes them on first use,
   * and the storage writes these bytes as they are (docdb/encoding/value.ts).
   */
  utf8?: Uint8Array;
}

/**
 * One cell write of HBase's model (docs/cells.md). `ht`: the cell's timestamp chosen by the client
 * (absent: the write's own hybrid time). A put at an explicit timestamp replaces an earlier put of
 * the same cell at the same timestamp; delete markers sort after every put of their timestamp, so
 * they mask it (HBase: a delete masks puts at or before its timestamp).
 */
export type CellWrite =
  | { kind: 'put'; columnId: number; value: Exclude<Primitive, null>; ht?: HybridTime; ttlMs?: number }
  /** Mask the versions of the column at exactly `ht` (HBase Delete.addColumn). */
  | { kind: 'deleteVersion'; columnId: number; ht: HybridTime }
  /** Mask every version of the column at or before `ht` (HBase Delete.addColumns). */
  | { kind: 'deleteColumn'; columnId: number; ht?: HybridTime }
  /** Mask every version of every column of the row at or before `ht` (HBase's row Delete). */
  | { kind: 'deleteRow'; ht?: HybridTime };

export type RowOp =
  /** Insert or overwrite the given columns and mark the row live. */
  | { type: 'upsert'; key: DocKey; columns: ColumnWrite[]; ttlMs?: number }
  /** Tombstone the whole row. */
  | { type: 'delete'; key: DocKey }
  /** Cell writes of one row (HBase's Put and Delete with timestamps; no liveness column: a row is its cells). */
  | { type: 'cells'; key: DocKey; cells: CellWrite[] };

export interface Row {
  key: DocKey;
  /** columnId → value; absent columns are null. */
  columns: Map<number, Primitive>;
  /** Hybrid time of the newest version that makes up this row. */
  writeHt: HybridTime;
}

/** A stored value, independent of its byte encoding. */
export type StoredValue =
  /** `utf8`: as ColumnWrite's (the bytes of a string value, written as they are). */
  | { type: 'primitive'; value: Primitive; ttlMs?: number; utf8?: Uint8Array }
  | { type: 'tombstone' }
  | { type: 'versionTombstone' }
  | { type: 'liveness'; ttlMs?: number };

/** Which part of the row a version belongs to. */
export type SubKind = { kind: 'row' } | { kind: 'liveness' } | { kind: 'column'; id: number };

/** What this database was asked to write since it opened (each batch is one engine call: one RocksDB write). */
export interface WriteCounts {
  batches: number;
  /** Of `batches`, the synced ones (a RocksDB WAL fsync each). */
  syncedBatches: number;
  /** Ops in those batches by kind; a delRange counts once, before it is expanded into point deletes. */
  puts: number;
  dels: number;
  delRanges: number;
}

export const TxnStatus = { PENDING: 'PENDING', COMMITTED: 'COMMITTED', ABORTED: 'ABORTED' } as const;
export type TxnStatus = (typeof TxnStatus)[keyof typeof TxnStatus];

export type TxnStatusAnswer =
  | { status: 'COMMITTED'; commitHt: HybridTime }
  | { status: 'PENDING' }
  | { status: 'ABORTED' };

/** How a reader learns the fate of another transaction whose intent it met (cached by the caller). */
export type StatusResolver = (txnId: TxnId, readHt: HybridTime) => Promise<TxnStatusAnswer>;


export interface TxnMeta {
  txnId: TxnId;
  statusTablet: string;
  isolation: Isolation;
  priority: number;
  startHt: HybridTime;
}

/**
 * Read locks of a serializable transaction on one tablet (YugabyteDB's read intents): a strong read
 * intent on each row read (and on each row an INSERT/UPDATE checks for existence), and for a scan
 * one on the whole tablet (its lock key, which every write meets through an implied weak intent).
 */
export interface ReadLocks {
  rows: readonly DocKey[];
  tablet: boolean;
  /**
   * Hash-key locks of a table with range columns (storage-keys hashKeyLock): a scan confined to one
   * hash key locks every row under it, present and future, instead of the whole tablet.
   */
  hashKeys?: readonly DocKey[];
}

/** Every DocKey a read-lock set puts a strong read intent on (rows, then hash keys). */
export function readLockKeys(reads: ReadLocks): readonly DocKey[] {
  return reads.hashKeys && reads.hashKeys.length > 0 ? [...reads.rows, ...reads.hashKeys] : reads.rows;
}

export interface ReadOptions {
  readHt: HybridTime;
  /** The reading transaction (its own intents are visible). */
  txnId?: TxnId;
  resolveStatus: StatusResolver;
  /** Upper end of the uncertainty window; a version in (readHt, globalLimitHt] raises READ_RESTART. */
  globalLimitHt?: HybridTime;
  columns?: number[];
}

export interface ScanOptions extends ReadOptions {
  /** Inclusive lower DocKey bound (encoded). */
  startKey?: Uint8Array;
  /** Exclusive upper DocKey bound (encoded). */
  endKey?: Uint8Array;
  limit?: number;
  /** Stored bytes of the returned rows at which the scan stops early, with a resume key (ReadRange.maxBytes). */
  maxBytes?: number;
  /** A server-side filter (docs/filters.md): a fresh evaluator per call (it keeps state). */
  filter?: CellFilter;
  /** Follow the filter's seek hints (default true; false reads every cell: the tests' reference). */
  filterSeekHints?: boolean;
}

export interface ScanResult {
  rows: Row[];
  /** Encoded DocKey to resume from, when the row limit or the byte budget cut the scan short. */
  resumeKey?: Uint8Array;
  /** With a filter: cells read from storage, and of those the ones the filter dropped. */
  cellsRead?: number;
  cellsSkipped?: number;
  /** With a filter: storage seeks made for its hints. */
  seeks?: number;
}

export type Conflict =
  | { type: 'intent'; txnId: TxnId; key: DocKey }
  | { type: 'committedAfterRead'; key: DocKey; commitHt: HybridTime };

export interface ApplyProgress {
  /** True once every intent of the transaction is in RegularDB and gone from IntentsDB. */
  done: boolean;
  recordsApplied: number;
}

export interface DbSizes {
  regulardb: { memtableBytes: number; sstBytes: number; rowCache?: { rows: number; bytes: number; hits: number; misses: number } };
  intentsdb: { memtableBytes: number; sstBytes: number; intentCount: number };
}

/** A committed transaction to apply on this replica, and the Raft entry that ordered it. */
/** What writeRegularMany did with a committed transaction's apply. */
export type ApplyMark = 'none' | 'pending' | 'applied';

export interface ApplyItem {
  txnId: TxnId;
  commitHt: HybridTime;
  opId: OpId;
}

export interface DocDbApi {
  /** Single-tablet fast path: one batch straight into RegularDB at `ht`, write ids in op order. */
  writeRegular(ops: readonly RowOp[], ht: HybridTime, opId: OpId): Promise<void>;
  /**
   * Several entries' writes (each at its own ht, in log order) in one atomic engine batch; frontier =
   * the newest op id. `marks`: committed transactions whose apply is noted pending in the same batch
   * (as markApplyPending does) — or, with `applyNow` and a small transaction whose records are in
   * memory, applied in that batch (its versions and apply state; the intent deletes are deferred as
   * in applyIntentsMany). The result says per mark: 'pending' (call applyIntents/applyIntentsMany),
   * 'applied', or 'none' (nothing to apply).
   */
  writeRegularMany(batches: ReadonlyArray<{ ops: readonly RowOp[]; ht: HybridTime; opId: OpId }>, marks?: readonly ApplyItem[], applyNow?: boolean): Promise<ApplyMark[]>;
  /** Provisional records for `txn` (strong intents on written keys, weak on ancestors) + reverse index + metadata. */
  writeIntents(txn: TxnMeta, ops: readonly RowOp[], ht: HybridTime, opId: OpId, reads?: ReadLocks): Promise<void>;
  /** Several entries' intents (in log order) in one engine batch; `reads`: a serializable transaction's read locks. */
  writeIntentsMany(items: ReadonlyArray<{ txn: TxnMeta; ops: readonly RowOp[]; ht: HybridTime; opId: OpId; reads?: ReadLocks }>): Promise<void>;
  /**
   * Apply several committed transactions (each marked pending before): the small ones whose records
   * are in memory together — one synced RegularDB batch of all their versions, one IntentsDB batch
   * of all their deletes — the others one by one as applyIntents does.
   */
  applyIntentsMany(items: readonly ApplyItem[]): Promise<void>;
  /** Write deferred clean-ups of applyIntentsMany (intent deletes after a sync, apply-state deletes). */
  flushDeferred(): Promise<void>;
  /** How long the oldest deferred intent delete has waited, in ms (0: none waits). */
  deferredAgeMs(): number;
  /**
   * Make everything both databases hold (frontiers included) durable: one synced write to each, which
   * forces its RocksDB write-ahead log to disk up to there (group-committed with other syncs).
   */
  syncDurable(): Promise<void>;
  /**
   * Conflicts `ops` (and the read locks `reads`) of `txn` would have with other transactions'
   * intents, or committed versions newer than `readHt` on the rows `ops` write.
   */
  findConflicts(txn: TxnMeta, ops: readonly RowOp[], readHt: HybridTime, reads?: ReadLocks): Promise<Conflict[]>;
  /** Does `txnId` already hold every read lock of `reads` here (known from memory; false when unsure)? */
  holdsReadLocks(txnId: TxnId, reads: ReadLocks): boolean;
  /**
   * Intents of any transaction that a non-transactional write of `ops` conflicts with (it takes the
   * intent types of a snapshot-isolation write). Status is not resolved: the caller does that.
   */
  findIntentConflicts(ops: readonly RowOp[]): Promise<Conflict[]>;
  /** Move the committed transaction's intents into RegularDB at commitHt, in chunks, resumable, idempotent. */
  applyIntents(txnId: TxnId, commitHt: HybridTime, opId: OpId, chunkRecordsMax?: number): Promise<ApplyProgress>;
  /**
   * Durably record that the committed `txnId` must be applied at `commitHt` (an apply state with
   * nothing applied yet), so a restart finishes it even if the ordering Raft entry is not replayed.
   * Returns false when the transaction has nothing here to apply.
   */
  markApplyPending(txnId: TxnId, commitHt: HybridTime, opId: OpId): Promise<boolean>;
  /** Delete an aborted transaction's intents. Idempotent. */
  removeIntents(txnId: TxnId, opId: OpId): Promise<void>;
  /** Transactions that have intents or an unfinished apply (rebuilt at restart). */
  listTransactions(): Promise<Array<{ meta: TxnMeta; intentCount: number; applying?: { commitHt: HybridTime } }>>;
  getRow(key: DocKey, opts: ReadOptions): Promise<Row | undefined>;
  scan(opts: ScanOptions): Promise<ScanResult>;
  /** The newest op id whose effects each database holds (replay the Raft log after the smaller one). */
  frontier(): Promise<{ regular: OpId; intents: OpId }>;
  sizes(): Promise<DbSizes>;
  /** Write batches and ops each database was asked for since this replica opened them. */
  writeCounts(): { regulardb: WriteCounts; intentsdb: WriteCounts };
  /** Digest of RegularDB's data keys (with versions) and values, to compare replicas. */
  regularChecksum(): Promise<{ sha256: string; entries: number; bytes: number }>;
  /** Digest of the provisional records of transactions no APPLY or REMOVE reached yet (equal on replicas at one applied index). */
  pendingIntentsDigest(): Promise<{ sha256: string; txns: number; records: number }>;
  /**
   * The column ids of the table's current schema (undefined: the table was never altered). Versions of
   * other column ids belong to dropped columns: reads ignore them and compact() deletes them. Set at
   * open and at every schema change; a column id must never be given again to a later column.
   */
  setSchemaColumns(columnIds: readonly number[] | undefined): void;
  /**
   * Each column's family rules (docs/cells.md; undefined or a missing id: the default family): row
   * reads apply the family TTL, cell reads and history GC the whole retention. Set with the schema.
   */
  setCellFamilies(rules: ReadonlyMap<number, CellRules> | undefined): void;
  /** Cell reads (versions, time range, as-of, raw): SNAPSHOT_TOO_OLD below the history floor. */
  readCells(opts: CellReadOptions): Promise<CellReadResult>;
  /**
   * Garbage-collect versions below the history cutoff (never what a registered reader may still see)
   * and every version of a dropped column.
   */
  compact(historyCutoffHt: HybridTime): Promise<void>;
  /** compact() with figures: the cutoff used (capped by readers and unapplied transactions) and what was dropped. */
  gc(
    historyCutoffHt: HybridTime,
    /** startKey / rowsMax: an incremental pass over part of the rows, answering where the next one starts (resumeKey). */
    opts?: { compactRange?: boolean; startKey?: Uint8Array; rowsMax?: number },
  ): Promise<{ versionsScanned: number; versionsDropped: number; droppedColumnVersions: number; cutoffHt: HybridTime; resumeKey?: Uint8Array }>;
  /** Upper bound of the newest version's hybrid time in RegularDB (undefined: not tracked). */
  newestVersionHt(): HybridTime | undefined;
  /** Lower bound of every version's hybrid time in RegularDB (2^64-1: none written yet; 0: unknown). */
  oldestVersionBound(): HybridTime;
  /** False while the table was never altered, so no dropped column's values can be stored. */
  mayHoldDroppedColumns(): boolean;
  /** The history cutoff for "now" (now minus timestamp_history_retention_interval_sec). */
  historyCutoff(nowHt: HybridTime): HybridTime;
  /** The highest cutoff GC ever used here (0: never): reads below it are refused (SNAPSHOT_TOO_OLD). */
  historyFloor(): HybridTime;
  /** Every stored version of one row (RegularDB only), complete from historyFloor() on. */
  rowVersions(key: DocKey): Promise<Array<{ sub: SubKind; ht: HybridTime; writeId: number; value: StoredValue }>>;
  close(): Promise<void>;
}
