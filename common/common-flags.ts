/** Flags owned by common/: clock and logging. */
import { defineFlag, FlagTag } from './flags';

export const MAX_CLOCK_SKEW_USEC = defineFlag({
  name: 'max_clock_skew_usec',
  type: 'int',
  default: 500_000,
  help: 'Largest clock difference between nodes that reads tolerate; a read sees a version in (read time, read time + this] as uncertain and restarts.',
  validate: (v) => (v >= 0 ? undefined : 'a non-negative number of microseconds'),
});

/** Dangerous: a skew past max_clock_skew_usec lets reads miss committed writes (stale reads, lost updates). */
export const TEST_CLOCK_SKEW_MS = defineFlag({
  name: 'TEST_clock_skew_ms',
  type: 'int',
  default: 0,
  help: "Offsets this process's physical clock by N ms (clock-skew experiments). (For testing only!)",
  tags: [FlagTag.runtime, FlagTag.dangerous],
});

export const LOG_LEVEL = defineFlag({
  name: 'log_level',
  type: 'string',
  default: 'info',
  help: 'Lowest log level written: trace, debug, info, warn, error, fatal.',
  tags: [FlagTag.runtime],
  validate: (v) => (['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(v) ? undefined : 'one of trace, debug, info, warn, error, fatal, silent'),
});

export const UV_THREADPOOL_SIZE = defineFlag({
  name: 'uv_threadpool_size',
  type: 'int',
  default: 1,
  help:
    "Threads in this server process's libuv pool, which runs every RocksDB call, WAL fdatasync and file read (sets UV_THREADPOOL_SIZE at start). " +
    'Each hand-off to the pool costs two context switches; on a small machine that shares its cores among several servers one thread is fastest ' +
    '(2-row transactions on 2 cores: ~15 % more per second than with 4). Raise it on many cores with slow disks.',
  validate: (v) => (v >= 1 && v <= 1024 ? undefined : 'between 1 and 1024'),
});
