/**
 * What RocksDB did in the background of one database, read from its own statistics text
 * (`rocksdb.cfstats-no-file-histogram` and `rocksdb.dbstats`, RocksDB 6.x): memtable flushes and
 * compactions since the database opened — how many, how long they ran and the CPU they took on
 * RocksDB's own background threads — and how long writes stalled waiting for them. None of this shows
 * in a V8 profile of the server (it runs on threads JavaScript never sees), so a benchmark that wants
 * to know what flushes and compactions cost per operation reads these counters before and after.
 *
 * The compaction-stats table "by priority" has one row per thread pool: `High` is the flush pool,
 * `Low` the compaction pool. Its columns used here are Comp(sec) (wall time of the jobs),
 * CompMergeCPU(sec) (their CPU time) and Comp(cnt) (jobs run). A row is missing until its pool ran a
 * job. Pure parsing: the engine passes the text in.
 */

export interface BackgroundWork {
  /** Memtable flushes completed (each writes one SST file at L0). */
  flushes: number;
  flushSeconds: number;
  flushCpuSeconds: number;
  /** Compaction jobs completed. */
  compactions: number;
  compactionSeconds: number;
  compactionCpuSeconds: number;
  /** Time writes were stalled or slowed down by RocksDB (too many L0 files, memtables not yet flushed). */
  stallSeconds: number;
}

export const BACKGROUND_ZERO: Readonly<BackgroundWork> = Object.freeze({ flushes: 0, flushSeconds: 0, flushCpuSeconds: 0, compactions: 0, compactionSeconds: 0, compactionCpuSeconds: 0, stallSeconds: 0 });

/** The size column prints as two tokens ("65.28 KB"), so data rows have one token more than the header. */
const SIZE_COLUMN = 'Size';

function priorityRows(cfstats: string): Map<string, Map<string, number>> {
  const rows = new Map<string, Map<string, number>>();
  let header: string[] | undefined;
  for (const line of cfstats.split('\n')) {
    const tokens = line.trim().split(/\s+/);
    if (tokens[0] === 'Priority') {
      header = tokens;
      continue;
    }
    if (header === undefined) continue;
    if (tokens[0] !== 'High' && tokens[0] !== 'Low') {
      if (tokens[0] !== '' && !tokens[0]!.startsWith('-')) header = undefined; // the table ended
      continue;
    }
    const sizeAt = header.indexOf(SIZE_COLUMN);
    const values = new Map<string, number>();
    header.forEach((name, i) => {
      if (i === 0) return;
      const v = Number(tokens[sizeAt >= 0 && i > sizeAt ? i + 1 : i]);
      if (Number.isFinite(v)) values.set(name, v);
    });
    rows.set(tokens[0]!, values);
  }
  return rows;
}

/** "Cumulative stall: 00:01:2.345 H:M:S, ..." → seconds (0 when absent). */
function cumulativeStallSeconds(dbstats: string): number {
  const m = /Cumulative stall:\s+(\d+):(\d+):(\d+(?:\.\d+)?)\s+H:M:S/.exec(dbstats);
  return m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) : 0;
}

export function parseBackgroundWork(cfstats: string, dbstats: string): BackgroundWork {
  const rows = priorityRows(cfstats);
  const high = rows.get('High');
  const low = rows.get('Low');
  const n = (row: Map<string, number> | undefined, col: string): number => row?.get(col) ?? 0;
  return {
    flushes: n(high, 'Comp(cnt)'),
    flushSeconds: n(high, 'Comp(sec)'),
    flushCpuSeconds: n(high, 'CompMergeCPU(sec)'),
    compactions: n(low, 'Comp(cnt)'),
    compactionSeconds: n(low, 'Comp(sec)'),
    compactionCpuSeconds: n(low, 'CompMergeCPU(sec)'),
    stallSeconds: cumulativeStallSeconds(dbstats),
  };
}
