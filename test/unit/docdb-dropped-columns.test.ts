/**
 * ALTER TABLE ... DROP COLUMN in DocDB: once the owner says which column ids the table's schema has
 * (setSchemaColumns), reads ignore the versions of every other column id and GC deletes them, whatever
 * their time — including versions that reach RegularDB after the drop from the intents of a
 * transaction that wrote the column before it. Run on the memory and the RocksDB engine.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { KvEngine } from '../../docdb/kv-engine';
import { MemoryEngine } from '../../docdb/memory-engine';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { ht, key, op, Statuses, storedVersions, txnMeta } from './docdb-helpers';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-docdb-dropcols-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;

const engines: Array<[string, () => Promise<{ regular: KvEngine; intents: KvEngine }>]> = [
  ['memory', () => Promise.resolve({ regular: new MemoryEngine(), intents: new MemoryEngine() })],
  [
    'rocksdb',
    async () => {
      const dir = path.join(root, `db${n++}`);
      return { regular: await RocksDbEngine.open(path.join(dir, 'regular')), intents: await RocksDbEngine.open(path.join(dir, 'intents')) };
    },
  ],
];

describe.each(engines)('docdb: dropped columns (%s engine)', (_name, engines) => {
  let st = new Statuses();
  beforeEach(() => {
    st = new Statuses();
  });
  const at = (t: number) => ({ readHt: ht(t), resolveStatus: st.resolve });
  /** Every row of the table at each of `times`, as plain objects (what a reader sees). */
  const snapshot = async (db: DocDb, times: number[]) => {
    const out: unknown[] = [];
    for (const t of times) {
      const r = await db.scan({ ...at(t), limit: 100 });
      out.push(r.rows.map((row) => [row.key.hashed[0], Object.fromEntries(row.columns), row.writeHt]).sort((a, b) => Number(a[0]) - Number(b[0])));
    }
    return out;
  };

  it('docdb GC: every version of a dropped column goes, at any time, with a transaction\'s applied after the drop; the other columns, rows and reads stay the same', async () => {
    const db = await DocDb.open(await engines());
    try {
      // Columns 1 (kept), 2 (dropped below), 3 (kept): three versions of each on rows 1-4, then row 4 deleted.
      for (let t = 1; t <= 3; t++) {
        const rows = [1, 2, 3, 4].map((k) => ({ type: 'upsert' as const, key: key(k), columns: [{ columnId: 1, value: `a${t}` }, { columnId: 2, value: BigInt(k * 10 + t) }, { columnId: 3, value: t === 2 ? null : true }] }));
        await db.writeRegular(rows, ht(t * 10), op(t));
      }
      await db.writeRegular([{ type: 'delete', key: key(4) }], ht(35), op(4));
      // Row 5 has only the dropped column's value (and liveness).
      await db.writeRegular([{ type: 'upsert', key: key(5), columns: [{ columnId: 2, value: 55n }] }], ht(36), op(5));
      // A transaction writes the column before the drop; it commits after it and applies after the first GC.
      await db.writeIntents(txnMeta('t1', ht(37)), [{ type: 'upsert', key: key(1), columns: [{ columnId: 2, value: 99n }, { columnId: 1, value: 'txn' }] }], ht(38), op(6));
      expect((await db.getRow(key(1), at(40)))?.columns.get(2)).toBe(13n);

      // ALTER TABLE ... DROP COLUMN (column 2): the schema now has columns 1 and 3.
      db.setSchemaColumns([1, 3]);
      st.commit('t1', ht(45));
      const times = [10, 20, 30, 40, 50];
      const before = await snapshot(db, times);
      const a3 = { 1: 'a3', 3: true };
      expect(before[2]).toEqual([[1n, a3, ht(30)], [2n, a3, ht(30)], [3n, a3, ht(30)], [4n, a3, ht(30)]]);
      expect(before[3]).toEqual([[1n, a3, ht(30)], [2n, a3, ht(30)], [3n, a3, ht(30)], [5n, {}, ht(36)]]);
      expect(before[4]).toEqual([[1n, { 1: 'txn', 3: true }, ht(45)], [2n, a3, ht(30)], [3n, a3, ht(30)], [5n, {}, ht(36)]]);
      const stored = await storedVersions(db);
      expect(stored.get('c2')).toBe(13);

      // A cutoff below most of the history: column 2's versions above it go too.
      const g = await db.gc(ht(15));
      expect(g.cutoffHt).toBe(ht(15));
      // Nothing else goes: every other version at or below 15 is its sub-key's newest there.
      expect([g.droppedColumnVersions, g.versionsDropped]).toEqual([13, 13]);
      const after = await storedVersions(db);
      expect(after.has('c2')).toBe(false);
      // Column 1: rows 1-4 at 10, 20, 30 (the version at 10 is the newest at the cutoff); column 3 likewise.
      expect([after.get('c1'), after.get('c3'), after.get('liveness')]).toEqual([12, 12, 13]);
      expect(await snapshot(db, [20, 30, 40, 50])).toEqual(before.slice(1));

      // The transaction's versions enter RegularDB now, column 2's included: never read, gone at the next GC.
      await db.applyIntents(TxnId('t1'), ht(45), op(7));
      expect((await storedVersions(db)).get('c2')).toBe(1);
      const applied = await snapshot(db, [50]);
      expect(applied).toEqual(before.slice(4));
      const g2 = await db.gc(ht(15));
      expect(g2.droppedColumnVersions).toBe(1);
      expect((await storedVersions(db)).has('c2')).toBe(false);
      expect(await snapshot(db, [50])).toEqual(applied);

      // ALTER TABLE ... ADD COLUMN: the new column has a new id (4), never 2; GC keeps it.
      db.setSchemaColumns([1, 3, 4]);
      await db.writeRegular([{ type: 'upsert', key: key(2), columns: [{ columnId: 4, value: 'new' }] }], ht(60), op(8));
      const g3 = await db.gc(ht(15));
      expect(g3.droppedColumnVersions).toBe(0);
      expect((await storedVersions(db)).get('c4')).toBe(1);
      expect((await db.getRow(key(2), at(60)))?.columns.get(4)).toBe('new');
    } finally {
      await db.close();
    }
  });

  it('docdb: reads ignore a dropped column before GC deletes it — a row it alone kept alive is absent either way; a table never altered loses nothing', async () => {
    const db = await DocDb.open(await engines());
    try {
      // Row 1: column 2 without TTL, then column 1 and liveness with a 5 s TTL: at 30 only column 2 is left
      // (GC at 30 leaves it alone, the table not being altered yet).
      await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 2, value: 'old' }] }], ht(10), op(1));
      await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'short' }], ttlMs: 5000 }], ht(20), op(2));
      await db.writeRegular([{ type: 'upsert', key: key(2), columns: [{ columnId: 1, value: 'b' }, { columnId: 2, value: 'x' }] }], ht(20), op(3));
      expect(Object.fromEntries((await db.getRow(key(1), at(30)))?.columns ?? [])).toEqual({ 2: 'old' });
      const kept = await db.gc(ht(30));
      expect([kept.droppedColumnVersions, (await storedVersions(db)).get('c2')]).toEqual([0, 2]);

      db.setSchemaColumns([1]);
      expect(await db.getRow(key(1), at(30))).toBeUndefined();
      const rows = async () => (await db.scan({ ...at(30), limit: 10 })).rows.map((r) => [r.key.hashed[0], Object.fromEntries(r.columns), r.writeHt]);
      const before = await rows();
      expect(before).toEqual([[2n, { 1: 'b' }, ht(20)]]);
      const g = await db.gc(ht(30));
      expect(g.droppedColumnVersions).toBe(2);
      expect(await rows()).toEqual(before);
      expect(await db.getRow(key(1), at(30))).toBeUndefined();
    } finally {
      await db.close();
    }
  });
});
