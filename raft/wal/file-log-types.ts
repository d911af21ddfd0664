/** Options, statistics and limits of the durable Raft log (file-log-storage.ts). */
import type { Flags } from '../../common/flags';
import type { Logger } from '../../common/log';
import type { LogCacheBudget } from './log-cache-budget';
import type { WalDurability } from './wal-durability';
import type { WalFs } from './wal-fs';

export interface FileLogStorageOptions {
  /** Server flags (durable_wal_write, interval_durable_wal_write_ms, log_segment_size_mb, log_cache_size_limit_mb). */
  flags?: Flags;
  /** File layer; LazyWalFs injects power loss and I/O errors in tests. */
  fs?: WalFs;
  /** Called once on the first write/fsync error. Default: log it and exit(70). Must not resume the log. */
  onFatal?: (err: Error) => void;
  logger?: Logger;
  /** Overrides log_segment_size_mb (tests roll segments after a few records). */
  segmentBytes?: number;
  /** Overrides log_cache_size_limit_mb. */
  cacheBytesMax?: number;
  /** The table's level (wal-durability.ts; default FSYNC); durable_wal_write=false caps it at FLUSH. */
  durability?: WalDurability;
  /** The server's budget over all its tablets' caches (global_log_cache_size_limit_mb). */
  cacheBudget?: LogCacheBudget;
  /** Copy every closed segment here before it is deleted (wal-archive.ts, --log_archive_dir). */
  archiveDir?: string;
}

export interface FileLogStorageStats {
  /** fdatasync/fsync calls on log segments (not counting metadata files). */
  logFsyncs: number;
  /**
   * Microseconds those calls took in all, each from the call to its completion seen by the event loop:
   * the wait for a thread-pool thread, the device flush, and the loop's own delay in running the callback.
   */
  syncMicros: number;
  /** The longest of them, µs. */
  syncMaxMicros: number;
  /** Those that took WAL_SLOW_SYNC_MS or longer. */
  slowSyncs: number;
  /** Writes of held-back records (with durable writes: one per round, covering every record appended since the last). */
  deferredWrites: number;
  /** Metadata file replacements (each is two fsyncs). */
  metaWrites: number;
  /** Group-commit rounds (sync() calls sharing one fdatasync count once). */
  syncRounds: number;
  appendCalls: number;
  entriesAppended: number;
  bytesWritten: number;
  segments: number;
  cacheBytes: number;
  tornBytesTruncated: number;
  /** All-zero tails (preallocated, never written) recovery truncated at open. */
  zeroTailBytesTruncated: number;
  /** Zero-fill writes ahead of the log's end (log_preallocate_segments), and their bytes. */
  preallocations: number;
  preallocatedBytes: number;
}

/** A log fdatasync that takes this long or longer counts as slow (FileLogStorageStats.slowSyncs): a disk stall, not a queue. */
export const WAL_SLOW_SYNC_MS = 100;

/** Beyond this many callers waiting in sync(), new callers get BACKPRESSURE. */
export const WAL_SYNC_WAITERS_MAX = 100_000;

export const MB = 1024 * 1024;
/** log_preallocate_segments: zeros written ahead of the active segment's end, this much at a time. */
export const WAL_PREALLOCATE_CHUNK_BYTES = MB;

export function emptyFileLogStats(): FileLogStorageStats {
  return {
    logFsyncs: 0,
    syncMicros: 0,
    syncMaxMicros: 0,
    slowSyncs: 0,
    deferredWrites: 0,
    metaWrites: 0,
    syncRounds: 0,
    appendCalls: 0,
    entriesAppended: 0,
    bytesWritten: 0,
    segments: 0,
    cacheBytes: 0,
    tornBytesTruncated: 0,
    zeroTailBytesTruncated: 0,
    preallocations: 0,
    preallocatedBytes: 0,
  };
}
