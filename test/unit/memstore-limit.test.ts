/**
 * The global memstore limit (tserver/memstore-limit.ts): YugabyteDB's global_memstore_size_percentage
 * of 85 % of RAM, capped by global_memstore_size_mb_max; above it the largest memtables are flushed
 * until the rest fits. The driver against real RocksDB databases: a flush empties the memtable.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Flags } from '../../common/flags';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { globalMemstoreLimitBytes, memtablesToFlush, startMemstoreLimit } from '../../tserver/memstore-limit';
import { waitUntil } from '../../lab/wait-until';
import { globalLogCacheLimitBytes, memoryLimitBytes } from '../../tserver/memory-limit';

const MiB = 1024 * 1024;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('global memstore limit', () => {
  it('memstore limit: 10 % of the memory limit (85 % of RAM unless memory_limit_hard_bytes), capped at global_memstore_size_mb_max', () => {
    expect(globalMemstoreLimitBytes(10, 2048, memoryLimitBytes(0, 24 * 1024 * MiB))).toBe(2048 * MiB);
    expect(globalMemstoreLimitBytes(10, 2048, memoryLimitBytes(0, 8 * 1024 * MiB))).toBe(Math.floor((Math.floor(8 * 1024 * MiB * 0.85) * 10) / 100));
    expect(globalMemstoreLimitBytes(10, 2048, memoryLimitBytes(512 * MiB, 24 * 1024 * MiB))).toBe(Math.floor((512 * MiB * 10) / 100));
  });

  it('memory limit: the Raft log caches get global_log_cache_size_limit_percentage of memory_limit_hard_bytes, capped at global_log_cache_size_limit_mb; runtime flags are read each time', () => {
    const flags = new Flags();
    expect(globalLogCacheLimitBytes(flags)).toBe(Math.min(256 * MiB, Math.floor((memoryLimitBytes(0) * 5) / 100)));
    flags.setFromString('memory_limit_hard_bytes', String(512 * MiB));
    expect(globalLogCacheLimitBytes(flags)).toBe(Math.floor((512 * MiB * 5) / 100));
    flags.setFromString('global_log_cache_size_limit_mb', '16');
    expect(globalLogCacheLimitBytes(flags)).toBe(16 * MiB);
    expect(() => flags.setFromString('memory_limit_hard_bytes', '1000')).toThrow(/64 MiB/);
  });

  it('memstore limit: the largest memtables are flushed until the rest fits, none when under the limit', () => {
    const m = [{ key: 'a', bytes: 30 }, { key: 'b', bytes: 50 }, { key: 'c', bytes: 20 }];
    expect(memtablesToFlush(m, 100)).toEqual([]);
    expect(memtablesToFlush(m, 60)).toEqual(['b']);
    expect(memtablesToFlush(m, 10)).toEqual(['b', 'a', 'c']);
  });

  it('memstore limit: above global_memstore_size_mb_max the driver flushes the larger RocksDB memtable, not the smaller', async () => {
    const open = async (name: string): Promise<RocksDbEngine> => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `tessera-memlimit-${name}-`));
      dirs.push(dir);
      return RocksDbEngine.open(dir, { writeBufferBytes: 64 * MiB });
    };
    const big = await open('big');
    const small = await open('small');
    const value = Buffer.alloc(64 * 1024, 7);
    await big.write(Array.from({ length: 48 }, (_, i) => ({ type: 'put' as const, key: Buffer.from(`k${i}`), value })));
    await small.write(Array.from({ length: 4 }, (_, i) => ({ type: 'put' as const, key: Buffer.from(`k${i}`), value })));
    const flags = new Flags();
    flags.setFromString('global_memstore_size_mb_max', '2');
    const flushed: string[] = [];
    const stop = startMemstoreLimit({ flags, engines: () => [{ name: 'big', engine: big }, { name: 'small', engine: small }], onFlush: (n) => flushed.push(n) });
    try {
      await waitUntil(async () => (await big.stats()).memtableBytes < MiB && (await big.stats()).sstBytes > 0, { timeoutMs: 10_000, what: 'the big memtable to be flushed' });
      expect(flushed).toEqual(['big']);
      expect((await small.stats()).memtableBytes).toBeGreaterThan(200 * 1024);
    } finally {
      stop();
      await big.close();
      await small.close();
    }
  });
});
