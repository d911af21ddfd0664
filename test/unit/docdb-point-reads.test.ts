/**
 * Point reads on reused iterators (docdb/point-reads.ts): a read of a row the row cache misses must
 * equal a read through a fresh iterator (docdb_row_cache_bytes 0) at every read time, however the
 * reused iterator's snapshot is older than the read: model-based against a DocDB without the cache,
 * with reads racing writes, on RocksDB, the memory engine and a split child's view of it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { DocDb } from '../../docdb/doc-db';
import { DOCDB_POINT_READ_AHEAD_BYTES, DOCDB_POINT_READ_ITERATORS, DOCDB_ROW_CACHE_BYTES } from '../../docdb/docdb-flags';
import { MemoryEngine } from '../../docdb/memory-engine';
import { RangeHidingEngine } from '../../docdb/range-hiding-engine';
import { encodeRowDocKey } from '../../docdb/storage-keys';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { ht, key, op, Statuses } from './docdb-helpers';

const none = new Statuses();
const read = (db: DocDb, k: number, at: number) => db.getRow(key(k), { readHt: ht(at), resolveStatus: none.resolve });
/** A row as text (bigints included), to compare. */
const shape = (r: Awaited<ReturnType<typeof read>>): string => JSON.stringify(r ? { c: [...r.columns].sort((a, b) => a[0] - b[0]), ht: r.writeHt } : null, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

type Step = { kind: 'write'; row: number; value: number; del: boolean } | { kind: 'read'; row: number; back: number } | { kind: 'race'; row: number; value: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('write' as const), row: fc.integer({ min: 0, max: 7 }), value: fc.integer({ min: 0, max: 1000 }), del: fc.boolean() }),
  fc.record({ kind: fc.constant('read' as const), row: fc.integer({ min: 0, max: 9 }), back: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('race' as const), row: fc.integer({ min: 0, max: 7 }), value: fc.integer({ min: 0, max: 1000 }) }),
);

/** A DocDB whose row cache is on but holds nothing (every read misses: the reused-iterator path), or off. */
type Engine = 'rocksdb' | 'memory' | 'split view';

/** A split child's view (range-hiding-engine.ts): everything visible, in two segments cut mid-table. */
function splitView(): RangeHidingEngine {
  const cut = encodeRowDocKey(key(4));
  return new RangeHidingEngine(new MemoryEngine(), [{ start: new Uint8Array(0), end: cut }, { start: cut, end: new Uint8Array(0) }]);
}

async function open(dir: string | undefined, name: string, cacheBytes: number, flags = new Flags(), engine: Engine = dir ? 'rocksdb' : 'memory'): Promise<DocDb> {
  flags.set(DOCDB_ROW_CACHE_BYTES, cacheBytes);
  if (engine === 'split view') return DocDb.open({ regular: splitView(), intents: new MemoryEngine(), flags });
  if (!dir) return DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine(), flags });
  return DocDb.open({ regular: await RocksDbEngine.open(path.join(dir, name, 'r')), intents: await RocksDbEngine.open(path.join(dir, name, 'i')), flags });
}

async function runSteps(steps: Step[], dir: string | undefined, run: number, engine: Engine): Promise<{ reads: number; opened: number }> {
  // 1 byte: enabled, but no row fits, so no read hits and every miss goes to the reused iterators.
  const pooled = await open(dir, `p${run}`, 1, new Flags(), engine);
  const plain = await open(dir, `f${run}`, 0);
  try {
    let t = 100;
    let index = 0;
    const write = (db: DocDb, s: { row: number; value: number; del?: boolean }, at: number) =>
      db.writeRegular([s.del ? { type: 'delete', key: key(s.row) } : { type: 'upsert', key: key(s.row), columns: [{ columnId: 1, value: BigInt(s.value) }] }], ht(at), op(index));
    for (const s of steps) {
      if (s.kind === 'write') {
        const at = ++t;
        index++;
        await write(pooled, s, at);
        await write(plain, s, at);
      } else if (s.kind === 'read') {
        const at = Math.max(1, t + 1 - s.back);
        expect(shape(await read(pooled, s.row, at))).toEqual(shape(await read(plain, s.row, at)));
      } else {
        // A read racing a write of its row: either version (the write is not acknowledged yet), then the new one.
        const at = ++t;
        index++;
        const before = shape(await read(plain, s.row, at));
        const w = write(pooled, s, at);
        const racing = read(pooled, s.row, at);
        await w;
        await write(plain, s, at);
        const after = shape(await read(plain, s.row, at));
        expect([before, after]).toContain(shape(await racing));
        expect(shape(await read(pooled, s.row, at))).toEqual(after);
      }
    }
    return { reads: pooled.pointReads.metrics.reads, opened: pooled.pointReads.metrics.opened };
  } finally {
    await pooled.close();
    await plain.close();
  }
}

describe('docdb point reads on reused iterators', () => {
  for (const engine of ['rocksdb', 'memory', 'split view'] as const) {
    it(`point reads (${engine}): reads on reused iterators equal fresh-iterator reads at every read time, writes and racing writes in between (model-based)`, async () => {
      const dir = engine === 'rocksdb' ? fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-pointreads-')) : undefined;
      let run = 0;
      let reused = 0;
      try {
        await fc.assert(
          fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40 }), async (steps) => {
            const m = await runSteps(steps, dir, run++, engine);
            reused += m.reads - m.opened;
          }),
          { numRuns: engine === 'rocksdb' ? 25 : 60 },
        );
      } finally {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
      }
      // The reused path was taken, not only the fallback.
      expect(reused).toBeGreaterThan(0);
    });
  }

  it('point reads: a row written after the reused iterator opened is read on a new one; docdb_point_read_iterators false reads the old way', async () => {
    const flags = new Flags();
    const db = await open(undefined, '', 1, flags);
    try {
      await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 1n }] }, { type: 'upsert', key: key(2), columns: [{ columnId: 1, value: 2n }] }], ht(10), op(1));
      expect((await read(db, 1, 20))?.columns.get(1)).toBe(1n);
      expect(db.pointReads.metrics.opened).toBe(1);
      // Row 2 not written since: the same iterator.
      expect((await read(db, 2, 20))?.columns.get(1)).toBe(2n);
      expect(db.pointReads.metrics.opened).toBe(1);
      await db.writeRegular([{ type: 'upsert', key: key(2), columns: [{ columnId: 1, value: 22n }] }], ht(11), op(2));
      // Row 1 still current for it; row 2 is not: a new iterator, which sees the write.
      expect((await read(db, 1, 20))?.columns.get(1)).toBe(1n);
      expect(db.pointReads.metrics.opened).toBe(1);
      expect((await read(db, 2, 20))?.columns.get(1)).toBe(22n);
      expect(db.pointReads.metrics.opened).toBe(2);
      expect(db.pointReads.metrics.stale).toBe(0);
      // docdb_point_read_iterators false: every read opens its own iterator (the old path), same answers.
      flags.set(DOCDB_POINT_READ_ITERATORS, false);
      const reads = db.pointReads.metrics.reads;
      expect((await read(db, 2, 20))?.columns.get(1)).toBe(22n);
      expect((await read(db, 3, 20))).toBeUndefined();
      expect(db.pointReads.metrics.reads).toBe(reads);
    } finally {
      await db.close();
    }
  });

  it('point reads: docdb_point_read_ahead_bytes sets the read-ahead of new iterators; a row of more native reads than allowed goes to a fresh iterator, same answer', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-point-ahead-'));
    const flags = new Flags();
    const db = await open(dir, 'a', 1, flags);
    try {
      // Row 5: six versions of column 1 and of its liveness (12 entries of ~20 bytes).
      for (let v = 1; v <= 6; v++) await db.writeRegular([{ type: 'upsert', key: key(5), columns: [{ columnId: 1, value: BigInt(v) }] }], ht(10 + v), op(v));
      expect((await read(db, 5, 100))?.columns.get(1)).toBe(6n);
      expect(db.pointReads.metrics.long).toBe(0); // 256 bytes ahead: two native reads
      // Read-ahead 0: one entry a native read. The write makes the idle iterator stale for row 5, so a new one (of this read-ahead) reads it.
      flags.set(DOCDB_POINT_READ_AHEAD_BYTES, 0);
      await db.writeRegular([{ type: 'upsert', key: key(5), columns: [{ columnId: 1, value: 7n }] }], ht(20), op(7));
      expect((await read(db, 5, 100))?.columns.get(1)).toBe(7n);
      expect(db.pointReads.metrics.long).toBe(1);
      expect((await read(db, 5, 13))?.columns.get(1)).toBe(3n);
    } finally {
      await db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
