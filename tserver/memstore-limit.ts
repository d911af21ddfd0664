/**
 * The global memstore limit, as YugabyteDB's: all memtables of a tserver together (every tablet
 * replica's RegularDB and IntentsDB) may hold at most global_memstore_size_percentage of the memory
 * a tserver may use (memory_limit_hard_bytes, by default 85 % of the machine's RAM: memory-limit.ts),
 * and never more than global_memstore_size_mb_max. Above it, memtables are flushed, largest first,
 * until the rest fits. (YugabyteDB flushes the tablet with the oldest memtable; the largest frees the
 * most per flush, which is what a bounded check every second needs.)
 *
 * memstore_size_mb (128 MiB) bounds one memtable; this bounds their sum, so a tserver hosting many
 * tablets does not hold 128 MiB × 2 per replica.
 */
import { defineFlag, FlagTag, type Flags } from '../common/flags';
import type { KvEngine } from '../docdb';
import { MEMORY_LIMIT_HARD_BYTES, memoryLimitBytes, shareOfLimitBytes } from './memory-limit';

export const GLOBAL_MEMSTORE_SIZE_PERCENTAGE = defineFlag({
  name: 'global_memstore_size_percentage',
  type: 'int',
  default: 10,
  help: "Percentage of the tserver's memory limit (memory_limit_hard_bytes; by default 85 % of the machine's RAM) that all memtables of its tablet replicas may hold together; above it the largest memtables are flushed. As YugabyteDB's flag of that name.",
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 && v <= 100 ? undefined : 'between 1 and 100 percent'),
});

export const GLOBAL_MEMSTORE_SIZE_MB_MAX = defineFlag({
  name: 'global_memstore_size_mb_max',
  type: 'int',
  default: 2048,
  help: 'Cap, in MiB, on the memory all memtables of this tserver may hold together (whatever global_memstore_size_percentage gives). As YugabyteDB\'s flag of that name.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 ? undefined : 'at least 1 MiB'),
});

/** How often the sum is checked. */
export const MEMSTORE_LIMIT_CHECK_MS = 1_000;
/** Flushes started per check at most (the next check goes on if the sum is still above the limit). */
const FLUSHES_PER_CHECK_MAX = 8;

/** All memtables' share of the tserver's memory limit (`limitBytes`: memoryLimitBytes). */
export function globalMemstoreLimitBytes(percentage: number, mbMax: number, limitBytes = memoryLimitBytes(0)): number {
  return shareOfLimitBytes(percentage, mbMax, limitBytes);
}

/** The memtables to flush, largest first, so that the rest sums to at most `limitBytes`. */
export function memtablesToFlush<K>(memtables: ReadonlyArray<{ key: K; bytes: number }>, limitBytes: number): K[] {
  let total = memtables.reduce((a, m) => a + m.bytes, 0);
  const out: K[] = [];
  for (const m of [...memtables].sort((a, b) => b.bytes - a.bytes)) {
    if (total <= limitBytes || out.length >= FLUSHES_PER_CHECK_MAX) break;
    out.push(m.key);
    total -= m.bytes;
  }
  return out;
}

export interface MemstoreLimitDeps {
  flags: Flags;
  /** Every open database of every tablet replica, named for the log. */
  engines(): Array<{ name: string; engine: KvEngine }>;
  onFlush?(name: string, bytes: number, limitBytes: number): void;
}

/** Checks the sum every MEMSTORE_LIMIT_CHECK_MS and flushes above the limit; returns the stop function. */
export function startMemstoreLimit(d: MemstoreLimitDeps): () => void {
  let running = false;
  const check = async (): Promise<void> => {
    const limit = globalMemstoreLimitBytes(d.flags.get(GLOBAL_MEMSTORE_SIZE_PERCENTAGE), d.flags.get(GLOBAL_MEMSTORE_SIZE_MB_MAX), memoryLimitBytes(d.flags.get(MEMORY_LIMIT_HARD_BYTES)));
    // A replica not open yet (or failed) has no engine to ask.
    const engines = d.engines().filter((e) => e.engine !== undefined);
    const sized = await Promise.all(engines.map(async (e) => ({ key: e, bytes: (await e.engine.stats().catch(() => undefined))?.memtableBytes ?? 0 })));
    for (const e of memtablesToFlush(sized, limit)) {
      d.onFlush?.(e.name, sized.find((x) => x.key === e)!.bytes, limit);
      // A replica closing or being replaced meanwhile refuses: the next check sees the new set.
      await e.engine.flush().catch(() => undefined);
    }
  };
  const t = setInterval(() => {
    if (running) return;
    running = true;
    void check()
      .catch(() => undefined) // best effort: the next check tries again
      .finally(() => (running = false));
  }, MEMSTORE_LIMIT_CHECK_MS);
  t.unref();
  return () => clearInterval(t);
}
