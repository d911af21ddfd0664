import { describe, expect, it } from 'vitest';
import { BACKGROUND_ZERO, parseBackgroundWork } from '../../docdb/rocksdb-stats';

/** Captured from the bundled RocksDB 6.17 (level-rocksdb) after 20,000 puts with a 64 KiB memtable. */
const CFSTATS = `** Compaction Stats [default] **
Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s) Wr(MB/s) Comp(sec) CompMergeCPU(sec) Comp(cnt) Avg(sec) KeyIn KeyDrop
----------------------------------------------------------------------------------------------------------------------------------------------------------------------------
  L0      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0   1.0      0.0      6.3      0.06              0.03        56    0.001       0      0
  L1      1/0   65.28 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0   2.3     21.6     15.8      0.05              0.05        14    0.004     78K    14K
 Sum      1/0   65.28 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0   3.3     10.2     10.8      0.11              0.08        70    0.002     78K    14K
 Int      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0   3.3     10.2     10.8      0.11              0.08        70    0.002     78K    14K

** Compaction Stats [default] **
Priority    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s) Wr(MB/s) Comp(sec) CompMergeCPU(sec) Comp(cnt) Avg(sec) KeyIn KeyDrop
-------------------------------------------------------------------------------------------------------------------------------------------------------------------------------
 Low      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0   0.0     21.6     15.8      0.05              0.05        14    0.004     78K    14K
High      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0   0.0      0.0      6.3      0.06              0.03        56    0.001       0      0
Uptime(secs): 1.3 total, 1.3 interval
Flush(GB): cumulative 0.000, interval 0.000
AddFile(GB): cumulative 0.000, interval 0.000
AddFile(Total Files): cumulative 0, interval 0
AddFile(L0 Files): cumulative 0, interval 0
AddFile(Keys): cumulative 0, interval 0
Cumulative compaction: 0.00 GB write, 0.88 MB/s write, 0.00 GB read, 0.83 MB/s read, 0.1 seconds
Interval compaction: 0.00 GB write, 0.89 MB/s write, 0.00 GB read, 0.84 MB/s read, 0.1 seconds
Stalls(count): 0 level0_slowdown, 0 level0_slowdown_with_compaction, 0 level0_numfiles, 0 level0_numfiles_with_compaction, 0 stop for pending_compaction_bytes, 0 slowdown for pending_compaction_bytes, 0 memtable_compaction, 0 memtable_slowdown, interval 0 total count
`;
const DBSTATS = `** DB Stats **
Uptime(secs): 1.3 total, 1.3 interval
Cumulative writes: 20K writes, 20K keys, 20K commit groups, 1.0 writes per commit group, ingest: 0.00 GB, 2.43 MB/s
Cumulative WAL: 20K writes, 0 syncs, 20000.00 writes per sync, written: 0.00 GB, 2.43 MB/s
Cumulative stall: 00:00:0.000 H:M:S, 0.0 percent
Interval writes: 20K writes, 20K keys, 20K commit groups, 1.0 writes per commit group, ingest: 3.24 MB, 2.44 MB/s
Interval WAL: 20K writes, 0 syncs, 20000.00 writes per sync, written: 0.00 MB, 2.44 MB/s
Interval stall: 00:00:0.000 H:M:S, 0.0 percent
`;

describe('parseBackgroundWork (RocksDB statistics text)', () => {
  it('reads flushes from the High pool row and compactions from the Low row, with their seconds and CPU', () => {
    expect(parseBackgroundWork(CFSTATS, DBSTATS)).toEqual({
      flushes: 56,
      flushSeconds: 0.06,
      flushCpuSeconds: 0.03,
      compactions: 14,
      compactionSeconds: 0.05,
      compactionCpuSeconds: 0.05,
      stallSeconds: 0,
    });
  });

  it('reads the cumulative stall time (H:M:S), not the interval one', () => {
    const db = DBSTATS.replace('Cumulative stall: 00:00:0.000', 'Cumulative stall: 01:02:3.500');
    expect(parseBackgroundWork(CFSTATS, db).stallSeconds).toBe(3600 + 120 + 3.5);
  });

  it('a pool that never ran a job has no row: zero for it', () => {
    const noLow = CFSTATS.split('\n').filter((l) => !l.startsWith(' Low')).join('\n');
    const w = parseBackgroundWork(noLow, DBSTATS);
    expect(w.flushes).toBe(56);
    expect([w.compactions, w.compactionSeconds, w.compactionCpuSeconds]).toEqual([0, 0, 0]);
  });

  it('the per-level table above it (L0, L1, Sum) is not taken for a pool row', () => {
    const onlyLevels = CFSTATS.split('** Compaction Stats [default] **')[1]!;
    expect(parseBackgroundWork(onlyLevels, '')).toEqual(BACKGROUND_ZERO);
  });

  it('text of another shape yields zeros, not garbage', () => {
    expect(parseBackgroundWork('', '')).toEqual(BACKGROUND_ZERO);
    expect(parseBackgroundWork('Priority Files\nHigh x y\n', 'Cumulative stall: garbage')).toEqual(BACKGROUND_ZERO);
  });
});
