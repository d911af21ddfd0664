/**
 * DocDB: small transactions applied inside a RegularDB batch share ONE apply-group record in it
 * (docdb/apply.ts applyGroupOps) instead of an apply state each; a crash before their deferred intent
 * deletes resumes them from that record at the next open.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TxnId } from '../../common/ids';
import { DeferredCleanup, flushDeferredCleanup } from '../../docdb/apply';
import { DocDb } from '../../docdb/doc-db';
import type { KvEngine } from '../../docdb/kv-engine';
import { MemoryEngine } from '../../docdb/memory-engine';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { APPLY_GROUP_PREFIX, APPLY_STATE_PREFIX, decodeApplyGroup, encodeApplyGroup } from '../../docdb/txn-records';
import { ht, key, op, Statuses, txnMeta } from './docdb-helpers';

const none = new Statuses();
const at = (t: bigint) => ({ readHt: t, resolveStatus: none.resolve });
const val = (r: { columns: Map<number, unknown> } | undefined) => r?.columns.get(1);
const upsert = (id: number, v: string) => ({ type: 'upsert' as const, key: key(id), columns: [{ columnId: 1, value: v }] });

/** The keys of RegularDB's apply bookkeeping: apply states (prefix 7) and apply-group records (prefix 8). */
async function applyRecords(e: KvEngine): Promise<{ states: number; groups: Uint8Array[] }> {
  const it = e.iterator({ gte: Buffer.from([APPLY_STATE_PREFIX]), lt: Buffer.from([APPLY_GROUP_PREFIX + 1]) });
  const out = { states: 0, groups: [] as Uint8Array[] };
  try {
    for (let e2 = await it.next(); e2 !== undefined; e2 = await it.next()) {
      if (e2[0][0] === APPLY_GROUP_PREFIX) out.groups.push(e2[1]);
      else out.states++;
    }
  } finally {
    await it.close();
  }
  return out;
}

for (const kind of ['memory', 'rocksdb'] as const) {
  describe(`docdb apply-group record (${kind})`, () => {
    const setup = async (dir: string) => {
      let engines: { r: KvEngine; i: KvEngine } =
        kind === 'memory' ? { r: new MemoryEngine(), i: new MemoryEngine() } : { r: await RocksDbEngine.open(path.join(dir, 'r')), i: await RocksDbEngine.open(path.join(dir, 'i')) };
      const open = () => DocDb.open({ regular: engines.r, intents: engines.i });
      /** A process crash: the engines close, DocDB's deferred clean-ups are never written. */
      const crash = async (): Promise<DocDb> => {
        await Promise.all([engines.r.close(), engines.i.close()]);
        engines =
          kind === 'memory'
            ? { r: (engines.r as MemoryEngine).reopen(), i: (engines.i as MemoryEngine).reopen() }
            : { r: await RocksDbEngine.open(path.join(dir, 'r')), i: await RocksDbEngine.open(path.join(dir, 'i')) };
        return open();
      };
      return { db: await open(), crash, regular: () => engines.r };
    };
    /** Two small transactions with intents, then committed and applied inside one RegularDB batch. */
    const applyTwo = async (db: DocDb): Promise<void> => {
      await db.writeIntentsMany([
        { txn: txnMeta('a'), ops: [upsert(1, 'a')], ht: ht(10), opId: op(1) },
        { txn: txnMeta('b'), ops: [upsert(2, 'b')], ht: ht(10), opId: op(2) },
      ]);
      const c0 = db.writeCounts().regulardb;
      const marks = await db.writeRegularMany([{ ops: [upsert(3, 'plain')], ht: ht(11), opId: op(3) }], [
        { txnId: TxnId('a'), commitHt: ht(12), opId: op(4) },
        { txnId: TxnId('b'), commitHt: ht(12), opId: op(4) },
      ], true);
      expect(marks).toEqual(['applied', 'applied']);
      // One batch, no delete in it (no apply state, no intent: those come with the deferred clean-up).
      const c1 = db.writeCounts().regulardb;
      expect(c1.batches - c0.batches).toBe(1);
      expect(c1.dels - c0.dels).toBe(0);
    };

    it(`docdb (${kind}): in-place applies write one apply-group record and no apply state; the deferred clean-up deletes the intents, then the record`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-ag-'));
      const s = await setup(dir);
      try {
        await applyTwo(s.db);
        const r = await applyRecords(s.regular());
        expect(r.states).toBe(0);
        expect(r.groups.map((g) => decodeApplyGroup(g).map((e) => e.txnId))).toEqual([['a', 'b']]);
        expect(await s.db.applyStates()).toEqual([]);
        await s.db.flushDeferred();
        expect((await s.db.sizes()).intentsdb.intentCount).toBe(0);
        expect(await applyRecords(s.regular())).toEqual({ states: 0, groups: [] });
        expect(val(await s.db.getRow(key(1), at(ht(20))))).toBe('a');
      } finally {
        await s.db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it(`docdb (${kind}): a crash before the deferred intent deletes — the reopened database shows the group's transactions applying, resumeApplies finishes them and deletes the record`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-ag-'));
      const s = await setup(dir);
      let db = s.db;
      try {
        await applyTwo(db);
        db = await s.crash();
        // Their intents are on disk and their APPLY entry may lie below both frontiers: the record
        // alone says they committed (never taken for pending transactions' intents).
        const listed = await db.listTransactions();
        expect(listed.map((t) => [t.meta.txnId, t.applying?.commitHt])).toEqual([
          ['a', ht(12)],
          ['b', ht(12)],
        ]);
        expect((await db.applyStates()).map((st) => st.meta.txnId).sort()).toEqual(['a', 'b']);
        expect(await db.resumeApplies()).toBe(2);
        expect(await db.listTransactions()).toEqual([]);
        expect((await db.sizes()).intentsdb.intentCount).toBe(0);
        expect(await applyRecords(s.regular())).toEqual({ states: 0, groups: [] });
        expect(val(await db.getRow(key(1), at(ht(20))))).toBe('a');
        expect(val(await db.getRow(key(2), at(ht(20))))).toBe('b');
        expect(val(await db.getRow(key(3), at(ht(20))))).toBe('plain');
        // A replay of the APPLY entry now finds nothing to apply.
        expect(await db.writeRegularMany([], [{ txnId: TxnId('a'), commitHt: ht(12), opId: op(4) }], true)).toEqual(['none']);
      } finally {
        await db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it(`docdb (${kind}): a crash after the intent deletes but before the record's delete — reopening resumes nothing and drops the record`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-ag-'));
      const s = await setup(dir);
      let db = s.db;
      try {
        await applyTwo(db);
        // The intent deletes are written; the record's delete waits as a rider of the next RegularDB write.
        await flushDeferredCleanup(db.regularDb, db.intentsDb, (db as unknown as { deferredCleanup: DeferredCleanup }).deferredCleanup);
        expect(db.regularDb.db.riderCount).toBe(1);
        expect((await db.sizes()).intentsdb.intentCount).toBe(0);
        db = await s.crash();
        expect(await db.listTransactions()).toEqual([]);
        expect(await db.resumeApplies()).toBe(0);
        expect(await applyRecords(s.regular())).toEqual({ states: 0, groups: [] });
        expect(val(await db.getRow(key(2), at(ht(20))))).toBe('b');
      } finally {
        await db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

it('docdb: apply-group record values round-trip', () => {
  const entries = [
    { txnId: TxnId('t-"1"'), commitHt: ht(5, 3), opId: { term: 2, index: 9 } },
    { txnId: TxnId('t2'), commitHt: ht(6), opId: { term: 2, index: 10 } },
  ];
  expect(decodeApplyGroup(encodeApplyGroup(entries))).toEqual(entries);
  expect(() => decodeApplyGroup(Buffer.from('[]'))).toThrow(/non-empty/);
});
