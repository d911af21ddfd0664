/** Flags owned by the WAL (YugabyteDB spelling and defaults where they exist). */
import { defineFlag, FlagTag } from '../../common/flags';

export const DURABLE_WAL_WRITE = defineFlag({
  name: 'durable_wal_write',
  type: 'bool',
  default: true,
  help: 'fsync the Raft log before sync() resolves (before a vote or append is acknowledged). When false, the log is fsynced in the background every interval_durable_wal_write_ms and a power loss can drop acknowledged entries.',
});

export const INTERVAL_DURABLE_WAL_WRITE_MS = defineFlag({
  name: 'interval_durable_wal_write_ms',
  type: 'int',
  default: 1000,
  help: 'With durable_wal_write=false: how often the Raft log is fsynced in the background.',
  validate: (v) => (v >= 1 ? undefined : 'a positive number of milliseconds'),
});

export const LOG_SEGMENT_SIZE_MB = defineFlag({
  name: 'log_segment_size_mb',
  type: 'int',
  default: 64,
  help: 'Size at which the Raft log rolls to a new segment file. Compaction deletes whole segments.',
  validate: (v) => (v >= 1 && v <= 4096 ? undefined : 'between 1 and 4096 MB'),
});

export const LOG_PREALLOCATE_SEGMENTS = defineFlag({
  name: 'log_preallocate_segments',
  type: 'bool',
  default: true,
  help: 'Write zeros ahead of the Raft log\'s end (1 MiB at a time, up to the segment size), so an fdatasync after an append flushes only the record\'s pages, not also new block allocations and the file size (on ext4 about a fifth to a third less CPU and latency per log fsync). Recovery treats an all-zero tail as the end of the log.',
});

export const LOG_CACHE_SIZE_LIMIT_MB = defineFlag({
  name: 'log_cache_size_limit_mb',
  type: 'int',
  default: 128,
  help: 'Per tablet: bytes of the newest Raft log entries kept in memory; older entries are read back from the segment files.',
  validate: (v) => (v >= 0 ? undefined : 'a non-negative number of MB'),
});

export const GLOBAL_LOG_CACHE_SIZE_LIMIT_MB = defineFlag({
  name: 'global_log_cache_size_limit_mb',
  type: 'int',
  default: 256,
  tags: [FlagTag.runtime],
  help: 'Per server: bytes of Raft log entries all its tablets together keep in memory (each tablet also stays within log_cache_size_limit_mb). Over it, the oldest entries of the largest caches are evicted first.',
  validate: (v) => (v >= 0 ? undefined : 'a non-negative number of MB'),
});
