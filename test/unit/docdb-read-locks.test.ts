/**
 * Read locks of serializable transactions in DocDB: strong read intents on rows read and on the
 * tablet lock key (a scan). Who conflicts with whom — readers with writers of the row, a scan's lock
 * with every write of the tablet (transactional or plain), readers never with readers — the same from
 * the intent index and from the engine walk (index budget 0); applies move no value for them and
 * leave IntentsDB empty; other transactions' reads do not see them.
 */
import { describe, expect, it } from 'vitest';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { Conflict, DocKey, ReadLocks, RowOp, TxnMeta } from '../../docdb/doc-db-api';
import { hashKeyLock } from '../../docdb/storage-keys';
import { MemoryEngine } from '../../docdb/memory-engine';
import { ht, key, op, Statuses, txnMeta } from './docdb-helpers';

const ser = (id: string): TxnMeta => ({ ...txnMeta(id), isolation: 'serializable' });
const upsert = (k: number, v = 'x'): RowOp => ({ type: 'upsert', key: key(k), columns: [{ columnId: 1, value: v }] });
const rows = (...ks: number[]): ReadLocks => ({ rows: ks.map(key), tablet: false });
const TABLET: ReadLocks = { rows: [], tablet: true };
const who = (cs: Conflict[]): string[] => [...new Set(cs.map((c) => (c.type === 'intent' ? c.txnId : 'committed')))].sort();

async function open(indexBudget?: number): Promise<DocDb> {
  return DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() }, indexBudget === undefined ? {} : { intentIndexBytesMax: indexBudget });
}

for (const [label, budget] of [
  ['intent index', undefined],
  ['engine walk', 0],
] as const) {
  describe(`docdb read locks (${label})`, () => {
    it('docdb read locks: a row read lock meets writes of that row (any column, delete; serializable or snapshot writer) and plain writes, never other readers', async () => {
      const db = await open(budget);
      await db.writeIntents(ser('r'), [], ht(10), op(1), rows(1));
      expect(who(await db.findConflicts(ser('w'), [upsert(1)], ht(11)))).toEqual(['r']);
      expect(who(await db.findConflicts(txnMeta('w'), [{ type: 'delete', key: key(1) }], ht(11)))).toEqual(['r']);
      expect(who(await db.findConflicts(ser('w'), [{ type: 'upsert', key: key(1), columns: [{ columnId: 2, value: 7n }] }], ht(11)))).toEqual(['r']);
      expect(who(await db.findIntentConflicts([upsert(1)]))).toEqual(['r']);
      expect(await db.findConflicts(ser('w'), [upsert(2)], ht(11))).toEqual([]);
      // Another reader of the row, and the lock holder writing its own row: no conflict.
      expect(await db.findConflicts(ser('r2'), [], ht(11), rows(1, 2))).toEqual([]);
      expect(await db.findConflicts(ser('r'), [upsert(1)], ht(11))).toEqual([]);
    });

    it('docdb read locks: a row read lock meets another transaction\'s write intent on the row, not its read lock', async () => {
      const db = await open(budget);
      await db.writeIntents(ser('w'), [upsert(1)], ht(10), op(1));
      await db.writeIntents(ser('r'), [], ht(10), op(2), rows(2));
      expect(who(await db.findConflicts(ser('x'), [], ht(11), rows(1)))).toEqual(['w']);
      expect(await db.findConflicts(ser('x'), [], ht(11), rows(2, 3))).toEqual([]);
      // Two serializable blind writers of one row do not conflict ({SW} vs {SW}); a snapshot writer does ({SR,SW}).
      expect(await db.findConflicts(ser('y'), [upsert(1)], ht(11))).toEqual([]);
      expect(who(await db.findConflicts(txnMeta('y'), [upsert(1)], ht(11)))).toEqual(['w']);
    });

    it('docdb read locks: a scan\'s tablet lock meets every write of the tablet and is met by every later write, transactional or plain', async () => {
      const db = await open(budget);
      await db.writeIntents(ser('s'), [], ht(10), op(1), TABLET);
      for (const k of [1, 2, 99]) {
        expect(who(await db.findConflicts(ser('w'), [upsert(k)], ht(11)))).toEqual(['s']);
        expect(who(await db.findConflicts(txnMeta('w'), [{ type: 'delete', key: key(k) }], ht(11)))).toEqual(['s']);
        expect(who(await db.findIntentConflicts([upsert(k)]))).toEqual(['s']);
      }
      // Readers (row or tablet) do not conflict with it.
      expect(await db.findConflicts(ser('r'), [], ht(11), rows(1))).toEqual([]);
      expect(await db.findConflicts(ser('r'), [], ht(11), TABLET)).toEqual([]);
      // The holder writes freely.
      expect(await db.findConflicts(ser('s'), [upsert(5)], ht(11))).toEqual([]);

      const db2 = await open(budget);
      await db2.writeIntents(ser('w1'), [upsert(3)], ht(10), op(1));
      await db2.writeIntents(txnMeta('w2'), [{ type: 'delete', key: key(4) }], ht(10), op(2));
      await db2.writeIntents(ser('r'), [], ht(10), op(3), rows(5));
      expect(who(await db2.findConflicts(ser('s'), [], ht(11), TABLET))).toEqual(['w1', 'w2']);
    });

    it('docdb read locks: a hash-key lock (range-column table) meets writes of every row under that hash key, present or new, transactional or plain, and the write intents already there — not other hash keys', async () => {
      const db = await open(budget);
      const rk = (h: number, r: number): DocKey => ({ ...key(h), range: [BigInt(r)] });
      const put = (h: number, r: number): RowOp => ({ type: 'upsert', key: rk(h, r), columns: [{ columnId: 1, value: 'x' }] });
      const lockOf = (h: number): ReadLocks => ({ rows: [], tablet: false, hashKeys: [hashKeyLock(rk(h, 0))!] });
      // The lock meets a write intent already under its hash key, not one under another.
      await db.writeIntents(ser('w1'), [put(1, 5)], ht(10), op(1));
      await db.writeIntents(ser('w2'), [put(2, 5)], ht(10), op(2));
      expect(who(await db.findConflicts(ser('s'), [], ht(11), lockOf(1)))).toEqual(['w1']);
      expect(who(await db.findConflicts(ser('s'), [], ht(11), lockOf(3)))).toEqual([]);
      // Held, it is met by every later write of a row under it (a phantom too), never by other hash keys.
      await db.writeIntents(ser('s'), [], ht(12), op(3), lockOf(3));
      expect(db.holdsReadLocks(TxnId('s'), lockOf(3))).toBe(budget === undefined);
      expect(who(await db.findConflicts(ser('w'), [put(3, 1)], ht(13)))).toEqual(['s']);
      expect(who(await db.findConflicts(txnMeta('w'), [{ type: 'delete', key: rk(3, 7) }], ht(13)))).toEqual(['s']);
      expect(who(await db.findIntentConflicts([put(3, 99)]))).toEqual(['s']);
      expect(await db.findConflicts(ser('w'), [put(4, 1)], ht(13))).toEqual([]);
      expect(await db.findIntentConflicts([put(2, 1)])).toEqual([]);
      // Readers do not meet it; its holder writes under it freely.
      expect(await db.findConflicts(ser('r'), [], ht(13), lockOf(3))).toEqual([]);
      expect(await db.findConflicts(ser('s'), [put(3, 2)], ht(13))).toEqual([]);
    });

    it('docdb read locks: a committed conflicting writer is reported as committed after the read time when later, and not at all when earlier', async () => {
      const db = await open(budget);
      const st = new Statuses();
      await db.writeIntents(ser('w'), [upsert(1)], ht(10), op(1));
      st.commit('w', ht(20));
      expect(await db.findConflicts(ser('r'), [], ht(15), rows(1), st.resolve)).toEqual([{ type: 'committedAfterRead', key: key(1), commitHt: ht(20) }]);
      expect(await db.findConflicts(ser('r'), [], ht(25), rows(1), st.resolve)).toEqual([]);
      st.abort('w');
      expect(await db.findConflicts(ser('r'), [], ht(15), TABLET, st.resolve)).toEqual([]);
    });
  });
}

describe('docdb read locks: storage', () => {
  it('docdb read locks: apply moves only the writes, deletes the locks; a read-only transaction leaves nothing behind', async () => {
    const db = await open();
    await db.writeIntents(ser('t'), [upsert(1, 'new')], ht(10), op(1), rows(1, 2));
    await db.writeIntents(ser('t'), [], ht(11), op(2), TABLET);
    await db.writeIntents(ser('ro'), [], ht(12), op(3), { rows: [key(3)], tablet: true });
    // Strong intents: the upsert's packed intent (liveness and column 1 in one record) + 2 row locks
    // + 1 tablet lock, and the read-only txn's 2 locks.
    expect((await db.sizes()).intentsdb.intentCount).toBe(6);
    expect(db.holdsReadLocks(TxnId('t'), { rows: [key(1), key(2)], tablet: true })).toBe(true);
    expect(db.holdsReadLocks(TxnId('t'), rows(3))).toBe(false);
    expect(db.holdsReadLocks(TxnId('ro'), rows(1))).toBe(false);
    // Another transaction's read sees neither the locks nor the pending write.
    const st = new Statuses();
    expect(await db.getRow(key(1), { readHt: ht(13), resolveStatus: st.resolve })).toBeUndefined();
    expect((await db.scan({ readHt: ht(13), resolveStatus: st.resolve })).rows).toEqual([]);

    await db.applyIntents(TxnId('t'), ht(20), op(4));
    await db.applyIntents(TxnId('ro'), ht(21), op(5));
    await db.flushDeferred();
    expect((await db.sizes()).intentsdb.intentCount).toBe(0);
    expect(await db.listTransactions()).toEqual([]);
    const scanned = await db.scan({ readHt: ht(30), resolveStatus: st.resolve });
    expect(scanned.rows.map((r) => [r.key.hashed[0], Object.fromEntries(r.columns)])).toEqual([[1n, { 1: 'new' }]]);
    // Nothing is locked any more.
    expect(await db.findConflicts(ser('w'), [upsert(2)], ht(31))).toEqual([]);
    expect(await db.findIntentConflicts([upsert(3)])).toEqual([]);
  });

  it('docdb read locks: an aborted transaction\'s locks go with its intents; locks survive a reopen (the index is rebuilt)', async () => {
    const regular = new MemoryEngine();
    const intents = new MemoryEngine();
    const db = await DocDb.open({ regular, intents });
    await db.writeIntents(ser('a'), [], ht(10), op(1), TABLET);
    await db.writeIntents(ser('b'), [], ht(10), op(2), rows(7));
    await db.close();
    const db2 = await DocDb.open({ regular: regular.reopen(), intents: intents.reopen() });
    expect(who(await db2.findConflicts(ser('w'), [upsert(7)], ht(11)))).toEqual(['a', 'b']);
    expect(db2.holdsReadLocks(TxnId('a'), TABLET)).toBe(true);
    await db2.removeIntents(TxnId('a'), op(3));
    expect(who(await db2.findConflicts(ser('w'), [upsert(7)], ht(11)))).toEqual(['b']);
    expect(await db2.findConflicts(ser('w'), [upsert(8)], ht(11))).toEqual([]);
  });
});
