/**
 * The tserver's memory limit, as YugabyteDB's: `memory_limit_hard_bytes`, or when it is 0 (the
 * default) 85 % of the machine's RAM (YugabyteDB's default_memory_limit_to_ram_ratio). The parts of
 * the server that hold data in memory take their budgets as shares of it: all memtables together
 * global_memstore_size_percentage (memstore-limit.ts), all Raft log caches together
 * global_log_cache_size_limit_percentage — each also capped by its own flag in MiB. Several
 * tservers on one machine (a local cluster, a lab) each believe they have the whole RAM; giving each
 * a hard limit is how they share it (docs/flags.md).
 */
import * as os from 'node:os';
import { defineFlag, FlagTag, type Flags } from '../common/flags';
import { GLOBAL_LOG_CACHE_SIZE_LIMIT_MB } from '../raft';

export const MEMORY_LIMIT_HARD_BYTES = defineFlag({
  name: 'memory_limit_hard_bytes',
  type: 'int',
  default: 0,
  help: "The tserver's memory limit in bytes: the memtables (global_memstore_size_percentage) and the Raft log caches (global_log_cache_size_limit_percentage) get their shares of it. 0: 85 % of the machine's RAM. As YugabyteDB's flag of that name.",
  tags: [FlagTag.runtime],
  validate: (v) => (v === 0 || v >= 64 * 1024 * 1024 ? undefined : '0 (85 % of RAM) or at least 64 MiB'),
});

export const GLOBAL_LOG_CACHE_SIZE_LIMIT_PERCENTAGE = defineFlag({
  name: 'global_log_cache_size_limit_percentage',
  type: 'int',
  default: 5,
  help: "Percentage of the tserver's memory limit (memory_limit_hard_bytes) that the Raft log caches of all its tablets may hold together, and never more than global_log_cache_size_limit_mb. As YugabyteDB's flag of that name.",
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 && v <= 100 ? undefined : 'between 1 and 100 percent'),
});

/** YugabyteDB's default_memory_limit_to_ram_ratio: the limit when memory_limit_hard_bytes is 0. */
export const MEMORY_LIMIT_TO_RAM_RATIO = 0.85;

/**
 * The machine's RAM, asked once: os.totalmem() reads /proc/meminfo, and the log cache budget asks for
 * the limit at every Raft append (3.5 % of a tserver's busy time in a lock-cycle profile).
 */
let ramBytesCached: number | undefined;
function totalRamBytes(): number {
  return (ramBytesCached ??= os.totalmem());
}

export function memoryLimitBytes(hardBytes: number, ramBytes = totalRamBytes()): number {
  return hardBytes > 0 ? hardBytes : Math.floor(ramBytes * MEMORY_LIMIT_TO_RAM_RATIO);
}

/** A share of the memory limit, in bytes, capped at `mbMax` MiB. */
export function shareOfLimitBytes(percentage: number, mbMax: number, limitBytes: number): number {
  return Math.min(Math.floor((limitBytes * percentage) / 100), mbMax * 1024 * 1024);
}

/** What all Raft log caches of this tserver may hold together (read at every check: runtime flags). */
export function globalLogCacheLimitBytes(flags: Flags): number {
  return shareOfLimitBytes(flags.get(GLOBAL_LOG_CACHE_SIZE_LIMIT_PERCENTAGE), flags.get(GLOBAL_LOG_CACHE_SIZE_LIMIT_MB), memoryLimitBytes(flags.get(MEMORY_LIMIT_HARD_BYTES)));
}
