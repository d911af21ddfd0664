import { describe, expect, it } from 'vitest';
import { isDbError } from '../../common/errors';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import { MemoryEngine } from '../../docdb/memory-engine';
import { encodeRowDocKey } from '../../docdb/storage-keys';
import { ht, key, memoryDocDb, op, Statuses, txnMeta } from './docdb-helpers';

const none = new Statuses();
const at = (t: bigint, txnId?: string) => ({ readHt: t, resolveStatus: none.resolve, ...(txnId ? { txnId: TxnId(txnId) } : {}) });
const cols = (r: { columns: Map<number, unknown> } | undefined) => (r ? Object.fromEntries(r.columns) : undefined);

describe('docdb regular reads and writes', () => {
  it('docdb: a read sees the newest version at or before its read time', async () => {
    const db = await memoryDocDb();
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'a' }, { columnId: 2, value: 10n }] }], ht(10), op(1));
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'b' }] }], ht(20), op(2));
    expect(await db.getRow(key(1), at(ht(5)))).toBeUndefined();
    expect(cols(await db.getRow(key(1), at(ht(15))))).toEqual({ 1: 'a', 2: 10n });
    const r = await db.getRow(key(1), at(ht(25)));
    expect(cols(r)).toEqual({ 1: 'b', 2: 10n });
    expect(r?.writeHt).toBe(ht(20));
  });

  it('docdb: a row tombstone shadows older columns; a later upsert revives only what it writes', async () => {
    const db = await memoryDocDb();
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'a' }, { columnId: 2, value: 'x' }] }], ht(10), op(1));
    await db.writeRegular([{ type: 'delete', key: key(1) }], ht(20), op(2));
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'c' }] }], ht(30), op(3));
    expect(await db.getRow(key(1), at(ht(25)))).toBeUndefined();
    expect(cols(await db.getRow(key(1), at(ht(35))))).toEqual({ 1: 'c' });
    expect(cols(await db.getRow(key(1), at(ht(15))))).toEqual({ 1: 'a', 2: 'x' });
  });

  it('docdb: a null column is a column tombstone; an all-null row still exists through liveness', async () => {
    const db = await memoryDocDb();
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'a' }] }], ht(10), op(1));
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: null }] }], ht(20), op(2));
    expect(cols(await db.getRow(key(1), at(ht(25))))).toEqual({});
  });

  it('docdb: TTL expires columns and liveness written with it, not older data', async () => {
    const db = await memoryDocDb();
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'keep' }] }], ht(10), op(1));
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 2, value: 'short' }], ttlMs: 5000 }], ht(20), op(2));
    expect(cols(await db.getRow(key(1), at(ht(24))))).toEqual({ 1: 'keep', 2: 'short' });
    expect(cols(await db.getRow(key(1), at(ht(26))))).toEqual({ 1: 'keep' });
    await db.writeRegular([{ type: 'upsert', key: key(2), columns: [{ columnId: 1, value: 'v' }], ttlMs: 1000 }], ht(20), op(3));
    expect(await db.getRow(key(2), at(ht(22)))).toBeUndefined();
  });

  it('docdb: scan returns rows in DocKey order within bounds, pages with a resume key', async () => {
    const db = await memoryDocDb();
    const ops = Array.from({ length: 20 }, (_, i) => ({ type: 'upsert' as const, key: key(i), columns: [{ columnId: 1, value: BigInt(i) }] }));
    await db.writeRegular(ops, ht(10), op(1));
    await db.writeRegular([{ type: 'delete', key: key(3) }], ht(11), op(2));
    const all: bigint[] = [];
    let resume: Uint8Array | undefined;
    for (let page = 0; page < 10; page++) {
      const r = await db.scan({ ...at(ht(12)), limit: 6, ...(resume ? { startKey: resume } : {}) });
      all.push(...r.rows.map((x) => x.columns.get(1) as bigint));
      resume = r.resumeKey;
      if (!resume) break;
    }
    expect(all.length).toBe(19);
    expect(all).not.toContain(3n);
    const sortedByKey = [...Array(20).keys()].filter((i) => i !== 3).sort((a, b) => Buffer.compare(encodeRowDocKey(key(a)), encodeRowDocKey(key(b))));
    expect(all).toEqual(sortedByKey.map(BigInt));
    const lo = encodeRowDocKey(key(sortedByKey[2]!));
    const hi = encodeRowDocKey(key(sortedByKey[5]!));
    const mid = await db.scan({ ...at(ht(12)), startKey: lo, endKey: hi });
    expect(mid.rows.map((x) => x.columns.get(1))).toEqual(sortedByKey.slice(2, 5).map(BigInt));
  });

  it('docdb: scan with maxBytes ends a page once its rows took that many stored bytes (at least one row), committed intents included', async () => {
    const db = await memoryDocDb();
    const st = new Statuses();
    const big = (i: number): string => String.fromCharCode(97 + i).repeat(10_000);
    // 6 rows in RegularDB, 4 more only as intents of a committed (not yet applied) transaction.
    await db.writeRegular(Array.from({ length: 6 }, (_, i) => ({ type: 'upsert' as const, key: key(i), columns: [{ columnId: 1, value: big(i) }] })), ht(10), op(1));
    await db.writeIntents(txnMeta('t1'), Array.from({ length: 4 }, (_, i) => ({ type: 'upsert' as const, key: key(6 + i), columns: [{ columnId: 1, value: big(6 + i) }] })), ht(11), op(2));
    st.commit('t1', ht(12));
    const read = { readHt: ht(13), resolveStatus: st.resolve };
    const pages: string[][] = [];
    let resume: Uint8Array | undefined;
    for (let page = 0; page < 20; page++) {
      const r = await db.scan({ ...read, maxBytes: 25_000, ...(resume ? { startKey: resume } : {}) });
      pages.push(r.rows.map((x) => (x.columns.get(1) as string)[0]!));
      resume = r.resumeKey;
      if (!resume) break;
    }
    // ~10 KB per row: the budget is reached by the third row, so pages of 3, 3, 3 and the last 1.
    expect(pages.map((p) => p.length)).toEqual([3, 3, 3, 1]);
    const order = [...Array(10).keys()].sort((a, b) => Buffer.compare(encodeRowDocKey(key(a)), encodeRowDocKey(key(b))));
    expect(pages.flat()).toEqual(order.map((i) => String.fromCharCode(97 + i)));
    // A budget below one row still makes progress, one row per page; no budget: one page.
    const one = await db.scan({ ...read, maxBytes: 1 });
    expect(one.rows.length).toBe(1);
    expect(one.resumeKey).toBeDefined();
    const all = await db.scan(read);
    expect(all.rows.length).toBe(10);
    expect(all.resumeKey).toBeUndefined();
  });

  it('docdb: a version inside (readHt, globalLimitHt] raises READ_RESTART with the restart time', async () => {
    const db = await memoryDocDb();
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'a' }] }], ht(10), op(1));
    const err = await db.getRow(key(1), { ...at(ht(9)), globalLimitHt: ht(11) }).catch((e: unknown) => e);
    expect(isDbError(err, 'READ_RESTART')).toBe(true);
    expect((err as { details: Record<string, unknown> }).details['restartHt']).toBe(ht(10).toString());
    expect(await db.getRow(key(1), { ...at(ht(9)), globalLimitHt: ht(9, 5) })).toBeUndefined();
  });

  it('docdb: the frontier is stored with each batch, survives reopen, and replayed ops are skipped', async () => {
    const r = new MemoryEngine();
    const i = new MemoryEngine();
    const db = await DocDb.open({ regular: r, intents: i });
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'a' }] }], ht(10), { term: 2, index: 7 });
    await db.writeIntents(txnMeta('t1'), [{ type: 'upsert', key: key(2), columns: [] }], ht(11), { term: 2, index: 8 });
    await db.close();
    const db2 = await DocDb.open({ regular: r.reopen(), intents: i.reopen() });
    expect(await db2.frontier()).toEqual({ regular: { term: 2, index: 7 }, intents: { term: 2, index: 8 } });
    await db2.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'replayed' }] }], ht(10), { term: 2, index: 7 });
    expect(cols(await db2.getRow(key(1), at(ht(12))))).toEqual({ 1: 'a' });
    expect((await db2.sizes()).intentsdb.intentCount).toBe(1);
  });
});

describe('docdb transactions', () => {
  it('docdb: own intents are visible to their txn, others see them only once committed at or before the read time', async () => {
    const db = await memoryDocDb();
    const st = new Statuses();
    await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'old' }] }], ht(5), op(1));
    await db.writeIntents(txnMeta('t1'), [{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'new' }] }], ht(10), op(2));
    expect(cols(await db.getRow(key(1), { readHt: ht(6), txnId: TxnId('t1'), resolveStatus: st.resolve }))).toEqual({ 1: 'new' });
    expect(cols(await db.getRow(key(1), { readHt: ht(20), resolveStatus: st.resolve }))).toEqual({ 1: 'old' });
    st.commit('t1', ht(15));
    expect(cols(await db.getRow(key(1), { readHt: ht(20), resolveStatus: st.resolve }))).toEqual({ 1: 'new' });
    expect(cols(await db.getRow(key(1), { readHt: ht(14), resolveStatus: st.resolve }))).toEqual({ 1: 'old' });
    const e = await db.getRow(key(1), { readHt: ht(14), globalLimitHt: ht(16), resolveStatus: st.resolve }).catch((x: unknown) => x);
    expect(isDbError(e, 'READ_RESTART')).toBe(true);
  });

  it('docdb: apply moves strong intents to RegularDB at the commit time and empties IntentsDB', async () => {
    const db = await memoryDocDb();
    const ops = Array.from({ length: 10 }, (_, i) => ({ type: 'upsert' as const, key: key(i), columns: [{ columnId: 1, value: `v${i}` }] }));
    await db.writeIntents(txnMeta('t1'), ops, ht(10), op(1));
    // One packed intent per row (docdb/packed-intent.ts); the per-cell format stored 20.
    expect((await db.sizes()).intentsdb.intentCount).toBe(10);
    expect((await db.listTransactions()).map((t) => [t.meta.txnId, t.intentCount])).toEqual([['t1', 10]]);
    const p = await db.applyIntents(TxnId('t1'), ht(12), op(2), 7);
    expect(p.done).toBe(true);
    expect((await db.sizes()).intentsdb.intentCount).toBe(0);
    expect(await db.listTransactions()).toEqual([]);
    const r = await db.getRow(key(3), at(ht(13)));
    expect(cols(r)).toEqual({ 1: 'v3' });
    expect(r?.writeHt).toBe(ht(12));
    expect(await db.getRow(key(3), at(ht(11)))).toBeUndefined();
    // Idempotent: a second apply finds nothing to do.
    expect(await db.applyIntents(TxnId('t1'), ht(12), op(3))).toEqual({ done: true, recordsApplied: 0 });
  });

  it('docdb: a chunked apply stopped midway is listed as applying and resumes to completion', async () => {
    const r = new MemoryEngine();
    const i = new MemoryEngine();
    const db = await DocDb.open({ regular: r, intents: i });
    const ops = Array.from({ length: 30 }, (_, k) => ({ type: 'upsert' as const, key: key(k), columns: [{ columnId: 1, value: BigInt(k) }] }));
    await db.writeIntents(txnMeta('big'), ops, ht(10), op(1));
    const p = await db.applyIntents(TxnId('big'), ht(12), op(2), 10, 2);
    expect(p).toEqual({ done: false, recordsApplied: 20 });
    await db.close();
    const db2 = await DocDb.open({ regular: r.reopen(), intents: i.reopen() });
    const listed = await db2.listTransactions();
    expect(listed[0]?.applying?.commitHt).toBe(ht(12));
    expect(await db2.resumeApplies()).toBe(1);
    const rows = await db2.scan(at(ht(13)));
    expect(rows.rows.length).toBe(30);
    expect((await db2.sizes()).intentsdb.intentCount).toBe(0);
    expect(await db2.listTransactions()).toEqual([]);
  });

  it('docdb: two concurrent applies of one txn (resume + replay) apply once and keep the intent count exact', async () => {
    const db = await memoryDocDb();
    const ops = Array.from({ length: 12 }, (_, k) => ({ type: 'upsert' as const, key: key(k), columns: [{ columnId: 1, value: BigInt(k) }] }));
    await db.writeIntents(txnMeta('t1'), ops, ht(10), op(1));
    const [a, b] = await Promise.all([db.applyIntents(TxnId('t1'), ht(12), op(2), 5), db.applyIntents(TxnId('t1'), ht(12), op(2), 5)]);
    expect(a.recordsApplied + b.recordsApplied).toBe(12); // one packed intent per row
    expect((await db.sizes()).intentsdb.intentCount).toBe(0);
    expect((await db.scan(at(ht(13)))).rows.length).toBe(12);
  });

  it('docdb: removeIntents drops an aborted txn entirely', async () => {
    const db = await memoryDocDb();
    await db.writeIntents(txnMeta('t1'), [{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'x' }] }], ht(10), op(1));
    await db.removeIntents(TxnId('t1'), op(2));
    expect((await db.sizes()).intentsdb.intentCount).toBe(0);
    expect(await db.listTransactions()).toEqual([]);
    expect(await db.getRow(key(1), at(ht(20), 't1'))).toBeUndefined();
  });

  it('docdb: findConflicts reports other txns on the same column or row, not on other rows, and newer commits', async () => {
    const db = await memoryDocDb();
    await db.writeIntents(txnMeta('t1'), [{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'x' }] }], ht(10), op(1));
    const t2 = txnMeta('t2');
    const same = await db.findConflicts(t2, [{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'y' }] }], ht(9));
    expect(same.some((c) => c.type === 'intent' && c.txnId === 't1')).toBe(true);
    const del = await db.findConflicts(t2, [{ type: 'delete', key: key(1) }], ht(9));
    expect(del.some((c) => c.type === 'intent' && c.txnId === 't1')).toBe(true);
    expect(await db.findConflicts(t2, [{ type: 'upsert', key: key(2), columns: [{ columnId: 1, value: 'y' }] }], ht(9))).toEqual([]);
    expect(await db.findConflicts(txnMeta('t1'), [{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'z' }] }], ht(9))).toEqual([]);
    await db.writeRegular([{ type: 'upsert', key: key(3), columns: [{ columnId: 1, value: 'c' }] }], ht(20), op(2));
    const late = await db.findConflicts(t2, [{ type: 'upsert', key: key(3), columns: [{ columnId: 1, value: 'y' }] }], ht(15));
    expect(late).toEqual([{ type: 'committedAfterRead', key: key(3), commitHt: ht(20) }]);
    const st = new Statuses();
    st.abort('t1');
    expect(await db.findConflicts(t2, [{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'y' }] }], ht(9), undefined, st.resolve)).toEqual([]);
  });

  it('docdb: GC keeps history newer than the cutoff and never what a registered reader sees', async () => {
    const db = await memoryDocDb();
    for (let t = 1; t <= 5; t++) await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: BigInt(t) }] }], ht(t * 10), op(t));
    await db.writeRegular([{ type: 'delete', key: key(2) }], ht(5), op(10));
    const release = db.registerReader(ht(25));
    const g1 = await db.gc(ht(45));
    expect(g1.cutoffHt).toBe(ht(25));
    expect(cols(await db.getRow(key(1), at(ht(25))))).toEqual({ 1: 2n });
    release();
    const g2 = await db.gc(ht(45));
    expect(g2.cutoffHt).toBe(ht(45));
    expect(cols(await db.getRow(key(1), at(ht(45))))).toEqual({ 1: 4n });
    expect(cols(await db.getRow(key(1), at(ht(55))))).toEqual({ 1: 5n });
    // Left: liveness + column at 40 and 50 (4 versions); the lone tombstone of key 2 is gone.
    expect((await db.regularDb.db.engine.stats()).keysApprox).toBe(4 + 1 /* frontier */ + 1 /* newest version time */ + 1 /* oldest version time */ + 1 /* history floor */);
    expect((await db.rowVersions(key(1))).map((v) => [v.sub.kind, v.ht])).toEqual([
      ['liveness', ht(50)],
      ['liveness', ht(40)],
      ['column', ht(50)],
      ['column', ht(40)],
    ]);
  });

  it('docdb: GC raises the history floor durably; reads below it fail SNAPSHOT_TOO_OLD, at it they work', async () => {
    const db = await memoryDocDb();
    expect(db.historyFloor()).toBe(0n);
    for (let t = 1; t <= 3; t++) await db.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: BigInt(t) }] }], ht(t * 10), op(t));
    expect(cols(await db.getRow(key(1), at(ht(15))))).toEqual({ 1: 1n }); // any time while nothing was collected
    await db.gc(ht(25));
    expect(db.historyFloor()).toBe(ht(25));
    const tooOld = (await db.getRow(key(1), at(ht(24))).catch((e: unknown) => e)) as { code?: string };
    expect(tooOld.code).toBe('SNAPSHOT_TOO_OLD');
    expect(((await db.scan(at(ht(1))).catch((e: unknown) => e)) as { code?: string }).code).toBe('SNAPSHOT_TOO_OLD');
    expect(cols(await db.getRow(key(1), at(ht(25))))).toEqual({ 1: 2n });
    // A transaction's write-write check below the floor could miss collected versions: refused too.
    const upd = [{ type: 'upsert' as const, key: key(1), columns: [{ columnId: 1, value: 9n }] }];
    expect(((await db.findConflicts(txnMeta('old'), upd, ht(24)).catch((e: unknown) => e)) as { code?: string }).code).toBe('SNAPSHOT_TOO_OLD');
    expect(await db.findConflicts(txnMeta('new'), upd, ht(25))).toEqual([{ type: 'committedAfterRead', key: key(1), commitHt: ht(30) }]);
    await db.gc(ht(20)); // a lower cutoff never lowers the floor
    expect(db.historyFloor()).toBe(ht(25));
    const again = await DocDb.open({ regular: db.regularDb.db.engine, intents: db.intentsDb.db.engine });
    expect(again.historyFloor()).toBe(ht(25));
    expect(again.newestVersionHt()).toBe(ht(30));
  });
});

describe('docdb: content checksum', () => {
  it('checksum: equal writes give equal digests on two engines; one differing version changes it', async () => {
    const { DocDb, MemoryEngine } = await import('../../docdb');
    const mk = () => DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
    const a = await mk();
    const b = await mk();
    const key = { hash: 1, hashed: [1n], range: [] };
    await a.writeRegular([{ type: 'upsert', key, columns: [{ columnId: 1, value: 'x' }] }], 100n << 12n, { term: 1, index: 1 });
    await b.writeRegular([{ type: 'upsert', key, columns: [{ columnId: 1, value: 'x' }] }], 100n << 12n, { term: 1, index: 1 });
    const ca = await a.regularChecksum();
    expect(ca.entries).toBeGreaterThan(0);
    expect(await b.regularChecksum()).toEqual(ca);
    await b.writeRegular([{ type: 'upsert', key, columns: [{ columnId: 1, value: 'y' }] }], 101n << 12n, { term: 1, index: 2 });
    expect((await b.regularChecksum()).sha256).not.toBe(ca.sha256);
  });
});
