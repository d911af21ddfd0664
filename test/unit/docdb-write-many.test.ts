/** DocDB: several Raft entries' RegularDB writes in one engine batch (the tablet's apply stage groups them). */
import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { APPLY_IN_BATCH_RECORDS_MAX, DocDb } from '../../docdb/doc-db';
import { TxnId } from '../../common/ids';
import type { KvEngine } from '../../docdb/kv-engine';
import { MemoryEngine } from '../../docdb/memory-engine';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { ht, key, op, Statuses, txnMeta } from './docdb-helpers';

const none = new Statuses();
const at = (t: bigint) => ({ readHt: t, resolveStatus: none.resolve });
const val = (r: { columns: Map<number, unknown> } | undefined) => r?.columns.get(1);
const upsert = (id: number, v: string) => [{ type: 'upsert' as const, key: key(id), columns: [{ columnId: 1, value: v }] }];

/** Counts engine writes, to show the group is one batch. */
function counting(e: KvEngine): { engine: KvEngine; writes: () => number } {
  let n = 0;
  const w = e.write.bind(e);
  e.write = (ops, opts) => {
    n++;
    return w(ops, opts);
  };
  return { engine: e, writes: () => n };
}

for (const kind of ['memory', 'rocksdb'] as const) {
  describe(`docdb writeRegularMany (${kind})`, () => {
    it(`docdb (${kind}): a group of entries is one engine write, each version at its own time, frontier = last op id; replayed entries are skipped`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-wm-'));
      const open = async (sub: string): Promise<KvEngine> => (kind === 'memory' ? new MemoryEngine() : RocksDbEngine.open(path.join(dir, sub)));
      const regular = counting(await open('r'));
      const db = await DocDb.open({ regular: regular.engine, intents: await open('i') });
      try {
        const before = regular.writes();
        const c0 = db.writeCounts().regulardb;
        await db.writeRegularMany([
          { ops: upsert(1, 'a1'), ht: ht(10), opId: { term: 1, index: 5 } },
          { ops: upsert(1, 'a2'), ht: ht(11), opId: { term: 1, index: 6 } },
          { ops: upsert(2, 'b'), ht: ht(12), opId: { term: 1, index: 7 } },
        ]);
        expect(regular.writes() - before).toBe(1);
        // The counters the tserver exports (tserver_docdb_write_*) saw the same one batch: 3 versions + the frontier.
        const c1 = db.writeCounts().regulardb;
        expect(c1.batches - c0.batches).toBe(1);
        expect(c1.syncedBatches - c0.syncedBatches).toBe(0);
        expect(c1.puts - c0.puts).toBeGreaterThanOrEqual(4);
        expect(c1.dels - c0.dels).toBe(0);
        expect(val(await db.getRow(key(1), at(ht(10))))).toBe('a1');
        expect(val(await db.getRow(key(1), at(ht(11))))).toBe('a2');
        expect(val(await db.getRow(key(2), at(ht(12))))).toBe('b');
        expect((await db.frontier()).regular).toEqual({ term: 1, index: 7 });
        // A replay that overlaps the frontier writes only what is new.
        await db.writeRegularMany([
          { ops: upsert(1, 'stale'), ht: ht(11), opId: { term: 1, index: 6 } },
          { ops: upsert(3, 'c'), ht: ht(13), opId: { term: 1, index: 8 } },
        ]);
        expect(val(await db.getRow(key(1), at(ht(20))))).toBe('a2');
        expect(val(await db.getRow(key(3), at(ht(20))))).toBe('c');
        expect((await db.frontier()).regular).toEqual({ term: 1, index: 8 });
        // All below the frontier: no write at all.
        const n = regular.writes();
        const c2 = db.writeCounts();
        await db.writeRegularMany([{ ops: upsert(4, 'x'), ht: ht(14), opId: { term: 1, index: 8 } }]);
        expect(regular.writes()).toBe(n);
        expect(db.writeCounts().regulardb.batches).toBe(c2.regulardb.batches);
        // A durability barrier is one synced batch on each database.
        await db.syncDurable();
        expect(db.writeCounts().regulardb.syncedBatches).toBe(c2.regulardb.syncedBatches + 1);
        expect(db.writeCounts().intentsdb.syncedBatches).toBe(c2.intentsdb.syncedBatches + 1);
        expect(regular.writes()).toBe(n + 1);
        expect(await db.getRow(key(4), at(ht(20)))).toBeUndefined();
      } finally {
        await db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it(`docdb (${kind}): with applyNow a small committed transaction is applied inside the batch; one above APPLY_IN_BATCH_RECORDS_MAX records is marked pending for the apply worker`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-wm-'));
      const open = async (sub: string): Promise<KvEngine> => (kind === 'memory' ? new MemoryEngine() : RocksDbEngine.open(path.join(dir, sub)));
      const db = await DocDb.open({ regular: await open('r'), intents: await open('i') });
      try {
        const bigRows = APPLY_IN_BATCH_RECORDS_MAX + 1; // 1 record per row: its packed intent (docdb/packed-intent.ts)
        const rows = (from: number, n: number, v: string) => Array.from({ length: n }, (_, i) => upsert(from + i, v)[0]!);
        await db.writeIntents(txnMeta('small'), rows(0, 2, 's'), ht(10), op(1));
        await db.writeIntents(txnMeta('big'), rows(100, bigRows, 'b'), ht(11), op(2));
        const b0 = db.writeCounts().regulardb.batches;
        const marks = await db.writeRegularMany([{ ops: upsert(5000, 'plain'), ht: ht(12), opId: op(3) }], [
          { txnId: TxnId('small'), commitHt: ht(13), opId: op(4) },
          { txnId: TxnId('big'), commitHt: ht(14), opId: op(5) },
        ], true);
        expect(marks).toEqual(['applied', 'pending']);
        expect(db.writeCounts().regulardb.batches).toBe(b0 + 1);
        // The small one reads from RegularDB: its intents (still on disk until the clean-up) count as
        // pending for this reader, so the value cannot come from them.
        expect(val(await db.getRow(key(1), at(ht(20))))).toBe('s');
        expect(val(await db.getRow(key(100), at(ht(20))))).toBeUndefined(); // the big one: not yet applied
        expect((await db.applyStates()).map((s) => s.meta.txnId)).toEqual(['big']);
        await db.applyIntentsMany([{ txnId: TxnId('big'), commitHt: ht(14), opId: op(5) }]);
        await db.flushDeferred();
        expect(await db.listTransactions()).toEqual([]);
        expect(val(await db.getRow(key(100 + bigRows - 1), at(ht(20))))).toBe('b');
      } finally {
        await db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

describe('FrontierDb syncBarrier', () => {
  it('docdb: concurrent sync barriers share synced writes (group commit), and each resolves after a sync that began after it was called', async () => {
    const { FrontierDb } = await import('../../docdb/frontier-db');
    const e = new MemoryEngine();
    const synced: number[] = [];
    const w = e.write.bind(e);
    let writes = 0;
    e.write = (ops, opts) => {
      const n = ++writes;
      if (opts?.sync) synced.push(n);
      return w(ops, opts);
    };
    const db = await FrontierDb.open(e);
    await db.write([{ type: 'put', key: Buffer.from([0x30]), value: Buffer.from('a') }], { term: 1, index: 1 });
    const order: string[] = [];
    const barriers = Array.from({ length: 20 }, (_, i) => db.syncBarrier().then(() => order.push(`b${i}`)));
    await Promise.all(barriers);
    expect(order).toHaveLength(20);
    expect(synced.length).toBeGreaterThanOrEqual(1);
    expect(synced.length).toBeLessThanOrEqual(2);
    // A barrier called after a write always gets a sync that started after that write.
    await db.write([{ type: 'put', key: Buffer.from([0x31]), value: Buffer.from('b') }], { term: 1, index: 2 });
    const before = writes;
    await db.syncBarrier();
    expect(synced[synced.length - 1]!).toBeGreaterThan(before);
  });
});
