/** Flags owned by docdb/ (YugabyteDB spelling). */
import { defineFlag, FlagTag } from '../common/flags';

export const TXN_MAX_APPLY_BATCH_RECORDS = defineFlag({
  name: 'txn_max_apply_batch_records',
  type: 'int',
  default: 100_000,
  help: 'Intent records moved from IntentsDB to RegularDB per apply chunk; a larger transaction applies in several chunks with a persisted apply state so a restart resumes.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 ? undefined : 'at least 1'),
});

export const TIMESTAMP_HISTORY_RETENTION_INTERVAL_SEC = defineFlag({
  name: 'timestamp_history_retention_interval_sec',
  type: 'int',
  default: 900,
  help: 'Compaction keeps every version newer than now minus this many seconds (and the newest one at or before it), so reads that far back still work.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 ? undefined : 'a non-negative number of seconds'),
});

export const DOCDB_POINT_READ_ITERATORS = defineFlag({
  name: 'docdb_point_read_iterators',
  type: 'bool',
  default: true,
  help: 'Point reads of rows the row cache misses reuse RocksDB iterators (docdb/point-reads.ts: no iterator opened and ended per row; a read is used only when the row was not written since the iterator opened). false opens one per read, as before (A/B). Needs the row cache on.',
  tags: [FlagTag.runtime],
});

export const DOCDB_POINT_READ_AHEAD_BYTES = defineFlag({
  name: 'docdb_point_read_ahead_bytes',
  type: 'int',
  default: 256,
  help: 'Bytes a reused point-read iterator reads ahead per native call after the first entry of a row (docdb/point-reads.ts): the binding makes two Buffers on the event loop for every entry it read, so less reads fewer entries past the row, more takes fewer calls for a row of many versions. Iterators opened after a change use it.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 && v <= 65_536 ? undefined : 'between 0 and 65536 bytes'),
});

export const DOCDB_ROW_CACHE_BYTES = defineFlag({
  name: 'docdb_row_cache_bytes',
  type: 'int',
  default: 8 << 20,
  help: "Bytes of committed rows each tablet replica keeps parsed in memory for point reads (a read that finds its row there needs no RocksDB iterator); used only while the tablet holds no intents. 0 disables it.",
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 ? undefined : 'a non-negative number of bytes'),
});

export const APPLY_CLEANUP_DELAY_MS = defineFlag({
  name: 'apply_cleanup_delay_ms',
  type: 'int',
  default: 200,
  help: "How long the clean-ups after a small transaction's apply may wait to share writes with other applies: its intents leave IntentsDB once one RegularDB sync covers the versions of every apply so far (instead of a sync per apply), and its apply state is deleted with a later write. The versions are in RegularDB (and read from there) at once either way. 0: the versions are synced and the intents deleted right after each apply.",
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 && v <= 60_000 ? undefined : 'between 0 and 60000 ms'),
});

export const MEMSTORE_SIZE_MB = defineFlag({
  name: 'memstore_size_mb',
  type: 'int',
  // YugabyteDB's default: a transaction of a few hundred MiB stays in IntentsDB's memtable until it is
  // applied (the picture of docs/walkthrough.md); memtables fill only as they are written.
  default: 128,
  help: "Memtable size of each tablet replica's RegularDB and IntentsDB (RocksDB write_buffer_size), in MiB, 128 as in YugabyteDB: RocksDB flushes a memtable to an SST file when it is this full. Larger means fewer flushes and, for IntentsDB, more intents written and deleted again before a flush ever writes them out; it costs up to that much memory per database. Read when a replica opens.",
  validate: (v) => (v >= 1 && v <= 1024 ? undefined : 'between 1 and 1024 MiB'),
});

export const MEMSTORE_SIZE_SPREAD_PCT = defineFlag({
  name: 'memstore_size_spread_pct',
  type: 'int',
  default: 0,
  help: "Spread of the memtable sizes around memstore_size_mb, in percent either way: each tablet replica's RegularDB and IntentsDB get a size of their own in that range, fixed per server and database (a hash of both, so a restart gives the same). The 3 replicas of a tablet receive the same writes and would otherwise fill their memtables at the same pace, flushing — and then compacting — in the same second on every server. 0 (the default): every memtable exactly memstore_size_mb, so the replicas' memtables stay alike byte for byte, as the intents-apply experiment shows them; with a spread they differ by RocksDB's arena blocks and flush at different points. Read when a replica opens.",
  validate: (v) => (v >= 0 && v <= 90 ? undefined : 'between 0 and 90 percent'),
});

/**
 * The memtable size of one database: memstore_size_mb spread by ±memstore_size_spread_pct, the point
 * in that range fixed by `who` (the server's uuid and the database's directory): FNV-1a of it.
 */
export function memtableBytes(baseMb: number, spreadPct: number, who: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < who.length; i++) {
    h ^= who.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const u = h / 0x1_0000_0000; // [0, 1)
  const spread = spreadPct / 100;
  return Math.round(baseMb * 1024 * 1024 * (1 - spread + 2 * spread * u));
}

export const TXN_PACKED_INTENTS = defineFlag({
  name: 'txn_packed_intents',
  type: 'bool',
  default: true,
  help: "A transactional upsert of a row is written as ONE packed intent on the row (its cells and values in one record, docdb/packed-intent.ts) instead of a strong intent per cell plus a weak one on the row: 1 IntentsDB put and 1 delete per row instead of 3+3 for 2 columns. Conflicts are then checked at row granularity for such writes (two transactions upserting different columns of one row conflict; stricter, never weaker). Intents of either format are read, applied and removed whatever the flag says. false: the per-cell format (A/B).",
  tags: [FlagTag.runtime],
});

export const TXN_LONE_INTENT_META = defineFlag({
  name: 'txn_lone_intent_meta',
  type: 'bool',
  default: true,
  help: "When a transaction's first write batch on a tablet stores ONE intent record (a packed row, a row delete, one read lock), that intent carries the transaction's metadata and no reverse-index entry is written: 1 IntentsDB put and 1 delete instead of 2 and 2 (docs/transactions.md \"A lone intent carries its transaction\"). The replica finds such intents from memory (and at open from the intents themselves). Either layout on disk is read, applied and removed whatever the flag says. false: a reverse-index entry per batch (A/B).",
  tags: [FlagTag.runtime],
});
