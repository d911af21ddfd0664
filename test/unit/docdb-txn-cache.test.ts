/**
 * DocDB's in-memory transaction bookkeeping (IntentsDb: metadata, the
 * records a txn wrote in this process; RegularDb: apply states). Apply and conflict checks use them
 * instead of disk walks, so they must stay exact across apply, abort, chunked applies and reopen.
 */
import { describe, expect, it } from 'vitest';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { KvEngine } from '../../docdb/kv-engine';
import { MemoryEngine } from '../../docdb/memory-engine';
import { ht, key, op, Statuses, txnMeta } from './docdb-helpers';

const none = new Statuses();
const cols = (r: { columns: Map<number, unknown> } | undefined) => (r ? Object.fromEntries(r.columns) : undefined);
const rows = (from: number, n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ type: 'upsert' as const, key: key(from + i), columns: [{ columnId: 1, value: `${tag}${from + i}` }] }));

/** Counts reads (get/getMany/iterator) of an engine. */
function readCounting(e: MemoryEngine): { engine: MemoryEngine; reads: () => number } {
  let n = 0;
  const wrap = <K extends 'get' | 'iterator'>(k: K): void => {
    const f = (e[k] as (...a: unknown[]) => unknown).bind(e);
    (e as unknown as Record<string, unknown>)[k] = (...a: unknown[]) => {
      n++;
      return f(...a);
    };
  };
  wrap('get');
  wrap('iterator');
  if (e.getMany) {
    const gm = e.getMany.bind(e);
    e.getMany = (keys) => {
      n++;
      return gm(keys);
    };
  }
  return { engine: e, reads: () => n };
}

async function conflictsOf(db: DocDb, id: string, k: number): Promise<string[]> {
  const c = await db.findConflicts(txnMeta(id), [{ type: 'upsert', key: key(k), columns: [{ columnId: 1, value: 'x' }] }], ht(1));
  return c.map((x) => (x.type === 'intent' ? x.txnId : x.type));
}

describe('docdb transaction bookkeeping in memory', () => {
  it('docdb cache: removing a transaction applied with its intent deletes still deferred leaves the strong intent count exact (reads keep seeing other transactions\' intents)', async () => {
    const db = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
    await db.writeIntents(txnMeta('t1'), rows(0, 2, 'a'), ht(10), op(1));
    await db.writeIntents(txnMeta('t2'), rows(10, 1, 'b'), ht(11), op(2));
    expect((await db.sizes()).intentsdb.intentCount).toBe(3); // one packed intent per row
    // t1 applied with the default apply_cleanup_delay_ms: its intents stay on disk for a while.
    await db.markApplyPending(TxnId('t1'), ht(12), op(3));
    await db.applyIntentsMany([{ txnId: TxnId('t1'), commitHt: ht(12), opId: op(3) }]);
    expect(db.deferredAgeMs()).toBeGreaterThanOrEqual(0);
    expect((await db.sizes()).intentsdb.intentCount).toBe(1);
    // A REMOVE of t1 (a leader's sweep that lost track of its commit) meets only leftovers: nothing to count.
    await db.removeIntents(TxnId('t1'), op(4));
    expect((await db.sizes()).intentsdb.intentCount).toBe(1);
    // t2's provisional write is still read as pending (not skipped as if IntentsDB were empty).
    const pending = new Statuses();
    expect(cols(await db.getRow(key(10), { readHt: ht(20), resolveStatus: pending.resolve }))).toBeUndefined();
    pending.commit(TxnId('t2'), ht(13));
    expect(cols(await db.getRow(key(10), { readHt: ht(20), resolveStatus: pending.resolve }))).toEqual({ 1: 'b10' });
    expect(cols(await db.getRow(key(0), { readHt: ht(20), resolveStatus: pending.resolve }))).toEqual({ 1: 'a0' });
  });

  it('docdb cache: a txn written in this process applies without reading its records back, with the same result', async () => {
    const intents = readCounting(new MemoryEngine());
    const db = await DocDb.open({ regular: new MemoryEngine(), intents: intents.engine });
    await db.writeIntents(txnMeta('t1'), rows(0, 5, 'a'), ht(10), op(1));
    await db.writeIntents(txnMeta('t1'), rows(5, 5, 'a'), ht(11), op(2));
    const before = intents.reads();
    expect(await db.markApplyPending(TxnId('t1'), ht(12), op(3))).toBe(true);
    const p = await db.applyIntents(TxnId('t1'), ht(12), op(3), 3); // chunks of 3 records
    expect(p).toEqual({ done: true, recordsApplied: 10 }); // 1 record per row: its packed intent
    expect(intents.reads() - before).toBe(0);
    for (let i = 0; i < 10; i++) expect(cols(await db.getRow(key(i), { readHt: ht(13), resolveStatus: none.resolve }))).toEqual({ 1: `a${i}` });
    expect((await db.sizes()).intentsdb.intentCount).toBe(0);
    expect(await db.listTransactions()).toEqual([]);
    expect(await db.applyStates()).toEqual([]);
    // No intent left on the key, only the committed version (newer than the checker's read time).
    expect(await conflictsOf(db, 'other', 3)).toEqual(['committedAfterRead']);
  });

  it('docdb gc: during a chunked apply GC keeps the cutoff below the commit time, so a row tombstone applied first still hides the row\'s older write of the same transaction', async () => {
    const r = new MemoryEngine();
    const i = new MemoryEngine();
    const db = await DocDb.open({ regular: r, intents: i });
    // One transaction upserts row 0 (no columns: liveness only), then deletes it.
    await db.writeIntents(txnMeta('t1'), [{ type: 'upsert', key: key(0), columns: [] }], ht(10), op(1));
    await db.writeIntents(txnMeta('t1'), [{ type: 'delete', key: key(0) }], ht(11), op(2));
    await db.close();
    // After a restart the records come from the reverse index, newest write first: the tombstone.
    const db2 = await DocDb.open({ regular: r.reopen(), intents: i.reopen() });
    expect(await db2.markApplyPending(TxnId('t1'), ht(12), op(3))).toBe(true);
    expect((await db2.applyIntents(TxnId('t1'), ht(12), op(3), 1, 1)).done).toBe(false);
    // GC asked for a cutoff at the commit time: the versions still to come are written AT it.
    const g = await db2.gc(ht(12));
    expect(g.cutoffHt < ht(12)).toBe(true);
    expect((await db2.applyIntents(TxnId('t1'), ht(12), op(3), 10)).done).toBe(true);
    expect(await db2.getRow(key(0), { readHt: ht(13), resolveStatus: none.resolve })).toBeUndefined();
    await db2.close();
  });

  it('docdb cache: an apply interrupted after one chunk resumes where it stopped, in this process and after reopen', async () => {
    const r = new MemoryEngine();
    const i = new MemoryEngine();
    const db = await DocDb.open({ regular: r, intents: i });
    await db.writeIntents(txnMeta('t1'), rows(0, 6, 'b'), ht(10), op(1));
    expect(await db.markApplyPending(TxnId('t1'), ht(12), op(2))).toBe(true);
    // One packed intent per row: 6 records, chunks of 2.
    expect(await db.applyIntents(TxnId('t1'), ht(12), op(2), 2, 1)).toEqual({ done: false, recordsApplied: 2 });
    expect(await db.applyIntents(TxnId('t1'), ht(12), op(2), 2, 1)).toEqual({ done: false, recordsApplied: 4 });
    expect((await db.applyStates()).map((s) => s.recordsApplied)).toEqual([4]);
    await db.close();
    // After a restart nothing is cached: the resumed apply walks the disk and finishes.
    const db2 = await DocDb.open({ regular: r.reopen(), intents: i.reopen() });
    expect((await db2.applyStates()).map((s) => [s.meta.txnId, s.recordsApplied])).toEqual([['t1', 4]]);
    expect(await db2.markApplyPending(TxnId('t1'), ht(12), op(2))).toBe(true);
    expect(await db2.applyIntents(TxnId('t1'), ht(12), op(2), 1)).toEqual({ done: true, recordsApplied: 6 });
    for (let k = 0; k < 6; k++) expect(cols(await db2.getRow(key(k), { readHt: ht(13), resolveStatus: none.resolve }))).toEqual({ 1: `b${k}` });
    expect(await db2.applyStates()).toEqual([]);
    expect((await db2.sizes()).intentsdb.intentCount).toBe(0);
  });

  it('docdb cache: conflict checks and applies stay exact across abort, reopen and a txn written before and after reopen', async () => {
    const r = new MemoryEngine();
    const i = new MemoryEngine();
    const db = await DocDb.open({ regular: r as KvEngine, intents: i as KvEngine });
    await db.writeIntents(txnMeta('t1'), rows(1, 1, 'c'), ht(10), op(1));
    await db.writeIntents(txnMeta('t2'), rows(2, 1, 'c'), ht(10), op(2));
    expect(await conflictsOf(db, 'me', 1)).toEqual(['t1']);
    expect(await conflictsOf(db, 'me', 3)).toEqual([]);
    await db.removeIntents(TxnId('t2'), op(3));
    expect(await conflictsOf(db, 'me', 2)).toEqual([]);
    await db.close();
    const db2 = await DocDb.open({ regular: r.reopen(), intents: i.reopen() });
    expect(await conflictsOf(db2, 'me', 1)).toEqual(['t1']);
    expect(await db2.markApplyPending(TxnId('t2'), ht(12), op(4))).toBe(false); // aborted: nothing to apply
    // t1 writes more after the restart: its metadata (next write id) came from disk, not a fresh start.
    await db2.writeIntents(txnMeta('t1'), [{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'c1-again' }] }], ht(11), op(5));
    expect(await db2.markApplyPending(TxnId('t1'), ht(12), op(6))).toBe(true);
    expect(await db2.applyIntents(TxnId('t1'), ht(12), op(6))).toEqual({ done: true, recordsApplied: 2 }); // a packed intent per write
    expect(cols(await db2.getRow(key(1), { readHt: ht(13), resolveStatus: none.resolve }))).toEqual({ 1: 'c1-again' });
    expect(await conflictsOf(db2, 'me', 1)).toEqual(['committedAfterRead']);
    expect((await db2.sizes()).intentsdb.intentCount).toBe(0);
  });
});
