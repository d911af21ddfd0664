/**
 * An ordered byte-string key/value store: RocksDB through level-rocksdb for real, an in-memory engine
 * for tests and simulation. Both pass test/unit/kv-engine-compliance. Keys compare as unsigned bytes.
 */
import type { BackgroundWork } from './rocksdb-stats';

export type KvOp = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array } | { type: 'delRange'; start: Uint8Array; end: Uint8Array };

export interface IteratorOptions {
  /** Inclusive lower bound. */
  gte?: Uint8Array;
  /** Exclusive upper bound. */
  lt?: Uint8Array;
  reverse?: boolean;
  /**
   * Bytes the engine reads ahead per native call after the first entry (RocksDB: the binding's
   * highWaterMark, 16 KiB by default). Small for an iterator reused for point reads after seeks
   * (docdb/point-reads.ts): what it reads past the row is thrown away at the next seek.
   */
  readAheadBytes?: number;
  /** Keep the blocks this iterator reads in the engine's block cache (RocksDB fill_cache; default off, as for scans). */
  fillCache?: boolean;
}

export interface KvIterator {
  /** Position at the first key >= target (or, in reverse, the last key <= target). */
  seek(target: Uint8Array): void;
  /** Next entry in iteration order, or undefined at the end/bound. */
  next(): Promise<[Uint8Array, Uint8Array] | undefined>;
  /**
   * The next entries in iteration order, at least one, as many as the engine already holds (RocksDB:
   * the rest of the batch its last native read fetched), or undefined at the end/bound: a long scan's
   * entries without one promise and event-loop turn each. Optional; callers fall back to next().
   */
  nextBatch?(): Promise<Array<[Uint8Array, Uint8Array]> | undefined>;
  close(): Promise<void>;
}

export interface KvStats {
  /** rocksdb.cur-size-all-mem-tables (or the in-memory equivalent for unflushed bytes). */
  memtableBytes: number;
  /** Total SST bytes on disk (0 for the memory engine unless flushed). */
  sstBytes: number;
  /** Approximate number of keys. */
  keysApprox: number;
}

export interface KvEngine {
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  /** Many point reads in one call (one native round trip for RocksDB); results in key order given. */
  getMany?(keys: readonly Uint8Array[]): Promise<Array<Uint8Array | undefined>>;
  /** Atomically apply the batch; `sync` makes it durable before resolving. */
  write(ops: readonly KvOp[], opts?: { sync?: boolean }): Promise<void>;
  iterator(opts?: IteratorOptions): KvIterator;
  stats(): Promise<KvStats>;
  /** RocksDB's background work since the database opened (flushes, compactions, stalls); engines without any leave it out. */
  background?(): BackgroundWork;
  flush(): Promise<void>;
  compactRange(start?: Uint8Array, end?: Uint8Array): Promise<void>;
  close(): Promise<void>;
}
