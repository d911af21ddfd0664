/**
 * DocDB's row cache (docdb/row-cache.ts): point reads served from parsed rows must equal reads
 * through the iterator at every read time, across writes, deletes, transactions, GC and the races
 * between a filling reader and a concurrent write.
 */
import { describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import { DOCDB_ROW_CACHE_BYTES } from '../../docdb/docdb-flags';
import { MemoryEngine } from '../../docdb/memory-engine';
import { ROW_CACHE_TRACK_IDLE_MS, RowCache } from '../../docdb/row-cache';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { encodeRowDocKey } from '../../docdb/storage-keys';
import type { CellWrite, RowOp } from '../../docdb/doc-db-api';
import { ht, key, op, Statuses, txnMeta } from './docdb-helpers';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const none = new Statuses();
const val = (r: { columns: Map<number, unknown> } | undefined): unknown => r?.columns.get(1);
const put = (k: number, v: string) => ({ type: 'upsert' as const, key: key(k), columns: [{ columnId: 1, value: v }] });
const read = (db: DocDb, k: number, at: number) => db.getRow(key(k), { readHt: ht(at), resolveStatus: none.resolve });

describe('docdb row cache', () => {
  it('row cache: hits after the first read; a write, a delete and GC invalidate; old read times still see old versions', async () => {
    const db = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
    await db.writeRegular([put(1, 'a')], ht(10), op(1));
    expect(val(await read(db, 1, 11))).toBe('a');
    const hits0 = db.rowCache.metrics.hits;
    expect(val(await read(db, 1, 11))).toBe('a');
    expect(db.rowCache.metrics.hits).toBe(hits0 + 1);
    expect(await read(db, 2, 11)).toBeUndefined(); // absent rows are cached too
    expect(await read(db, 2, 11)).toBeUndefined();
    expect(db.rowCache.metrics.hits).toBe(hits0 + 2);
    await db.writeRegular([put(1, 'b'), put(2, 'x')], ht(20), op(2));
    expect(val(await read(db, 1, 21))).toBe('b');
    expect(val(await read(db, 2, 21))).toBe('x');
    expect(val(await read(db, 1, 15))).toBe('a'); // MVCC from the cached versions
    expect(await read(db, 2, 15)).toBeUndefined();
    await db.writeRegular([{ type: 'delete', key: key(1) }], ht(30), op(3));
    expect(await read(db, 1, 31)).toBeUndefined();
    expect(val(await read(db, 1, 25))).toBe('b');
    // GC drops versions below the cutoff: the cache must not keep serving them as if nothing changed.
    await db.compact(ht(40));
    expect(await read(db, 1, 41)).toBeUndefined();
    expect(val(await read(db, 2, 41))).toBe('x');
  });

  it('row cache: uncertain versions still restart the read; reads with intents held bypass the cache', async () => {
    const db = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
    await db.writeRegular([put(1, 'a')], ht(10), op(1));
    await read(db, 1, 11);
    await db.writeRegular([put(1, 'b')], ht(20), op(2));
    await read(db, 1, 25); // fills with both versions
    const e = await db.getRow(key(1), { readHt: ht(15), globalLimitHt: ht(25), resolveStatus: none.resolve }).catch((x: unknown) => x);
    expect((e as { code: string }).code).toBe('READ_RESTART');
    // A pending transaction's intent on the row: reads go through the iterator (its own write is seen).
    await db.writeIntents(txnMeta('t1'), [put(1, 'mine')], ht(30), op(3));
    const hits = db.rowCache.metrics.hits;
    expect(val(await db.getRow(key(1), { readHt: ht(31), txnId: TxnId('t1'), resolveStatus: none.resolve }))).toBe('mine');
    expect(val(await read(db, 1, 31))).toBe('b');
    expect(db.rowCache.metrics.hits).toBe(hits);
    // Committed and applied: the applied version shows (the apply's RegularDB write invalidated).
    expect(await db.markApplyPending(TxnId('t1'), ht(32), op(4))).toBe(true);
    await db.applyIntents(TxnId('t1'), ht(32), op(4));
    expect(val(await read(db, 1, 33))).toBe('mine');
    expect(val(await read(db, 1, 33))).toBe('mine');
  });

  it('row cache: a reader that started before a write of its row (began or in flight) never fills the cache with what it read; writes of other rows do not stop fills', () => {
    const c = new RowCache(() => 1 << 20);
    const k = key(1);
    const v = [{ sub: { kind: 'column' as const, id: 1 }, ht: ht(1), writeId: 0, own: false, value: { type: 'primitive' as const, value: 'old' } }];
    const rowA = encodeRowDocKey(key(1));
    const rowB = encodeRowDocKey(key(2));
    const ha = rowA.toString('hex');
    const hb = rowB.toString('hex');
    const writeA = [{ type: 'put' as const, key: Buffer.concat([rowA, Buffer.from([0x40])]), value: Buffer.alloc(0) }];
    const t1 = c.token();
    c.beginWrite(writeA);
    c.fill(t1, ha, k, v); // a write of the row began after the token: refused
    c.fill(c.token(), ha, k, v); // a write of the row in flight: refused
    expect(c.get(ha)).toBeUndefined();
    c.fill(c.token(), hb, key(2), v); // another row: filled while A's write is in flight
    expect(c.get(hb)?.versions).toEqual(v);
    const t2 = c.token();
    c.endWrite(writeA);
    c.fill(t2, ha, k, v); // taken while the write was in flight: refused after it too
    expect(c.get(ha)).toBeUndefined();
    c.fill(c.token(), ha, k, v);
    expect(c.get(ha)?.versions).toEqual(v);
    // A key that cannot be placed by row stops every fill while in flight, and clears the cache.
    const odd = [{ type: 'put' as const, key: Buffer.from([0x30]), value: Buffer.alloc(0) }];
    c.beginWrite(odd);
    expect(c.token()).toBe(-1);
    c.endWrite(odd);
    expect(c.get(ha)).toBeUndefined();
    c.fill(c.token(), ha, k, v);
    const ranged = [{ type: 'delRange' as const, start: Buffer.from([0x20]), end: Buffer.from([0xff]) }];
    c.beginWrite(ranged); // FrontierDb passes the same ops to both
    c.endWrite(ranged);
    expect(c.get('aa')).toBeUndefined(); // a range delete clears everything
    // The byte bound evicts the oldest rows.
    const small = new RowCache(() => 2_000);
    for (let i = 0; i < 50; i++) small.fill(small.token(), `k${i}`, k, v);
    expect(small.usedBytes).toBeLessThanOrEqual(2_000);
    expect(small.get('k49')).toBeDefined();
    expect(small.get('k0')).toBeUndefined();
  });

  it('row cache: on RocksDB, concurrent reads and writes of the same rows always return the newest version at the read time (docdb_row_cache_bytes 0 turns it off)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-rowcache-'));
    try {
      for (const bytes of [8 << 20, 0]) {
        const flags = new Flags();
        flags.set(DOCDB_ROW_CACHE_BYTES, bytes);
        const sub = path.join(dir, String(bytes));
        const db = await DocDb.open({ regular: await RocksDbEngine.open(path.join(sub, 'r')), intents: await RocksDbEngine.open(path.join(sub, 'i')), flags });
        let t = 100;
        for (let round = 0; round < 40; round++) {
          const at = ++t;
          const w = db.writeRegular([put(round % 4, `v${round}`)], ht(at), op(round + 1));
          // Reads racing the write: either version is fine for them (the write is not acknowledged yet).
          const racing = Promise.all([0, 1, 2, 3].map((k) => read(db, k, at + 1)));
          await w;
          await racing;
          // After the write: a read at its time or later must see it.
          expect(val(await read(db, round % 4, at))).toBe(`v${round}`);
          expect(val(await read(db, round % 4, at + 1))).toBe(`v${round}`);
        }
        if (bytes === 0) expect(db.rowCache.metrics.hits).toBe(0);
        else expect(db.rowCache.metrics.hits).toBeGreaterThan(0);
        await db.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('row cache: writes of a cached row are written through (the next read hits) and every read equals a read without the cache, at every read time', async () => {
    const flagsOff = new Flags();
    flagsOff.set(DOCDB_ROW_CACHE_BYTES, 0);
    const on = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
    const off = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine(), flags: flagsOff });
    const both = async (ops: RowOp[], at: number, n: number): Promise<void> => {
      await on.writeRegular(ops, ht(at), op(n));
      await off.writeRegular(ops, ht(at), op(n));
    };
    const cells = (k: number, c: CellWrite[]): RowOp => ({ type: 'cells', key: key(k), cells: c });
    // Deterministic pseudo-random history of upserts, cell puts and deletes, row deletes and GC over 4 rows.
    let seed = 7;
    const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) % n);
    let at = 10;
    for (let step = 1; step <= 160; step++) {
      const k = rnd(4);
      const choice = rnd(10);
      at += 1 + rnd(3);
      if (choice < 4) await both([put(k, `v${step}`)], at, step);
      else if (choice < 6) await both([cells(k, [{ kind: 'put', columnId: 2, value: BigInt(step) }, { kind: 'deleteColumn', columnId: 1 }])], at, step);
      else if (choice < 7) await both([{ type: 'delete', key: key(k) }], at, step);
      else if (choice < 8) await both([cells(k, [{ kind: 'deleteVersion', columnId: 1, ht: ht(at - 1 - rnd(3)) }])], at, step);
      else if (choice < 9) await both([put(k, `a${step}`), put((k + 1) % 4, `b${step}`)], at, step);
      else {
        await on.compact(ht(at - 5));
        await off.compact(ht(at - 5));
      }
      // Reads of every row at the newest time and at older ones: the cached answer is the uncached one.
      for (let r = 0; r < 4; r++) {
        for (const t of [at + 1, at, at - 2, at - 7]) {
          const a = await on.getRow(key(r), { readHt: ht(t), resolveStatus: none.resolve });
          const b = await off.getRow(key(r), { readHt: ht(t), resolveStatus: none.resolve });
          expect(a && { c: Object.fromEntries(a.columns), w: a.writeHt }, `row ${r} at ${t} after step ${step}`).toEqual(b && { c: Object.fromEntries(b.columns), w: b.writeHt });
        }
      }
    }
    expect(on.rowCache.metrics.writtenThrough).toBeGreaterThan(100);
    // A read-modify-write's pattern: read (fills), write, read again — a hit that sees the write.
    await on.writeRegular([put(9, 'x')], ht(1000), op(500));
    expect(val(await read(on, 9, 1001))).toBe('x');
    await on.writeRegular([put(9, 'y')], ht(1002), op(501));
    const hits = on.rowCache.metrics.hits;
    expect(val(await read(on, 9, 1003))).toBe('y');
    expect(on.rowCache.metrics.hits).toBe(hits + 1);
    expect(val(await read(on, 9, 1001))).toBe('x');
  });

  it('row cache: a failed engine write drops its rows instead of writing them through', () => {
    const c = new RowCache(() => 1 << 20);
    const row = encodeRowDocKey(key(1));
    const hex = row.toString('hex');
    c.fill(c.token(), hex, key(1), []);
    expect(c.get(hex)).toBeDefined();
    const w = [{ type: 'put' as const, key: Buffer.concat([row, Buffer.from([0x40])]), value: Buffer.alloc(0) }];
    c.beginWrite(w);
    c.endWrite(w, false);
    expect(c.get(hex)).toBeUndefined();
  });

  it('row cache: with no row cached and no reader lately a write is not placed row by row, yet no token from before it or during it can fill; the next reader turns tracking back on', () => {
    let now = 0;
    const c = new RowCache(() => 1 << 20, () => now);
    const v = [{ sub: { kind: 'column' as const, id: 1 }, ht: ht(1), writeId: 0, own: false, value: { type: 'primitive' as const, value: 'old' } }];
    const rowA = encodeRowDocKey(key(1));
    const ha = rowA.toString('hex');
    const hb = encodeRowDocKey(key(2)).toString('hex');
    const writeA = () => [{ type: 'put' as const, key: Buffer.concat([rowA, Buffer.from([0x40])]), value: Buffer.alloc(0) }];
    // A reader took a token long ago (a slow one, or a pooled iterator's): the write is untracked.
    const old = c.token();
    now += ROW_CACHE_TRACK_IDLE_MS + 1;
    const w1 = writeA();
    c.beginWrite(w1);
    expect(c.metrics.untrackedWrites).toBe(1);
    expect(c.current(old, ha)).toBe(false);
    expect(c.current(old, hb)).toBe(false); // every row: the write was not placed
    expect(c.token()).toBe(-1); // none handed out while it is in flight
    c.fill(old, ha, key(1), v);
    expect(c.get(ha)).toBeUndefined();
    c.endWrite(w1);
    expect(c.current(old, ha)).toBe(false); // dead after it too
    expect(c.metrics.clears).toBe(0);
    // That token() call was a reader: the next write is placed, and fills of other rows go on.
    const w2 = writeA();
    const t = c.token();
    c.beginWrite(w2);
    expect(c.metrics.untrackedWrites).toBe(1);
    expect(c.current(t, ha)).toBe(false);
    expect(c.current(c.token(), hb)).toBe(true);
    c.endWrite(w2);
    // A cached row is always written through: a quiet cache with a row tracks its writes.
    c.fill(c.token(), ha, key(1), []);
    now += 10 * ROW_CACHE_TRACK_IDLE_MS;
    const w3 = writeA();
    c.beginWrite(w3);
    c.endWrite(w3);
    expect(c.metrics.untrackedWrites).toBe(1);
    expect(c.get(ha)).toBeUndefined(); // placed and written through (this bare key does not parse: dropped, never left stale)
  });
});
