import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import type { KvEngine } from '../../docdb/kv-engine';
import { kvEngineCompliance } from './kv-engine-compliance';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-kv-rocksdb-'));
let n = 0;
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

kvEngineCompliance('rocksdb', {
  create: () => RocksDbEngine.open(path.join(root, `db${n++}`)),
  reopen: async (e: KvEngine) => {
    const loc = (e as RocksDbEngine).location;
    await e.close();
    return RocksDbEngine.open(loc);
  },
});

describe('rocksdb engine: open', () => {
  it('rocksdb: a corrupt database fails open() with CORRUPTION naming it (no crash: the process stays up); once removed, the directory opens afresh', async () => {
    const loc = path.join(root, 'corrupt');
    const e = await RocksDbEngine.open(loc);
    await e.write([{ type: 'put', key: Buffer.from('k'), value: Buffer.from('v') }]);
    await e.close();
    fs.writeFileSync(path.join(loc, 'CURRENT'), 'not-a-manifest\n');
    const err = await RocksDbEngine.open(loc).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(DbError);
    expect((err as DbError).code).toBe(ErrorCode.CORRUPTION);
    expect((err as DbError).message).toContain('CURRENT file corrupted');
    expect((err as DbError).message).toContain(loc);
    fs.rmSync(loc, { recursive: true, force: true });
    const fresh = await RocksDbEngine.open(loc);
    expect(await fresh.get(Buffer.from('k'))).toBeUndefined();
    await fresh.close();
  });

  it('rocksdb: a second open of a directory this process holds fails with IO_ERROR (its LOCK), not a crash', async () => {
    const loc = path.join(root, 'held');
    const e = await RocksDbEngine.open(loc);
    await expect(RocksDbEngine.open(loc)).rejects.toMatchObject({ code: ErrorCode.IO_ERROR });
    await e.close();
  });
});

describe('rocksdb engine: background work', () => {
  it('rocksdb: counts its memtable flushes (with their CPU), each one once, from RocksDB\'s statistics', async () => {
    const e = await RocksDbEngine.open(path.join(root, 'background'), { writeBufferBytes: 64 << 10 });
    expect(e.background()).toMatchObject({ flushes: 0, compactions: 0, stallSeconds: 0 });
    const value = Buffer.alloc(100, 7);
    // ~1.2 MiB of puts through a 64 KiB memtable: RocksDB flushes on its own many times. The keys
    // repeat (2,000 of them), so the flushed files overlap and RocksDB must merge them: compactions.
    for (let batch = 0; batch < 100; batch++) {
      await e.write(Array.from({ length: 100 }, (_, i) => ({ type: 'put' as const, key: Buffer.from(`k${String((batch * 100 + i) % 2000).padStart(6, '0')}`), value })));
    }
    await e.flush();
    const w = e.background();
    expect(w.flushes).toBeGreaterThanOrEqual(10);
    expect(w.flushSeconds).toBeGreaterThanOrEqual(0);
    expect(w.flushCpuSeconds).toBeGreaterThanOrEqual(0);
    // Overlapping L0 files (RocksDB compacts from 4 on) were merged.
    expect(w.compactions).toBeGreaterThanOrEqual(1);
    // Reading the counters again changes nothing: they are cumulative, not "since the last read".
    expect(e.background()).toEqual(w);
    await e.close();
  });
});

describe('rocksdb engine: flush', () => {
  it('rocksdb: flush() asks RocksDB to compact the newest key only (which flushes the memtables), not the whole database; with nothing unflushed it asks nothing', async () => {
    const loc = path.join(root, 'flush-cheap');
    const e = await RocksDbEngine.open(loc);
    // The binding's compactRange, observed: the range each flush asks for.
    const ld = (e as unknown as { ld: { compactRange(s: Buffer, t: Buffer, cb: (err?: Error) => void): void } }).ld;
    const asked: Array<[string, string]> = [];
    const real = ld.compactRange.bind(ld);
    ld.compactRange = (s, t, cb) => {
      asked.push([s.toString('latin1'), t.toString('latin1')]);
      real(s, t, cb);
    };
    const rows = (from: number, n: number): Array<{ type: 'put'; key: Buffer; value: Buffer }> =>
      Array.from({ length: n }, (_, i) => ({ type: 'put' as const, key: Buffer.from(`k${String(from + i).padStart(8, '0')}`), value: Buffer.alloc(200, 1) }));
    await e.write(rows(0, 500));
    await e.write(rows(20_000, 500));
    const mid = await e.stats();
    await e.flush();
    expect(asked).toEqual([['k00020499', 'k00020499']]);
    const after = await e.stats();
    expect(after.memtableBytes).toBeLessThan(mid.memtableBytes / 10);
    expect(after.sstBytes).toBeGreaterThan(0);
    // Nothing unflushed: nothing asked.
    await e.flush();
    expect(asked).toHaveLength(1);
    // A delete is a write too: its key is the newest.
    await e.write([{ type: 'del', key: Buffer.from('k00000007') }]);
    await e.flush();
    expect(asked[1]).toEqual(['k00000007', 'k00000007']);
    const it = e.iterator();
    let n = 0;
    while ((await it.next()) !== undefined) n++;
    await it.close();
    expect(n).toBe(999);
    await e.close();
  });
});
