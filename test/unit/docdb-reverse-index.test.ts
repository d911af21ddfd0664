/**
 * IntentsDB's reverse index holds one entry per write batch of a transaction, listing that batch's
 * intent keys (issue 62: one entry per intent made a transactional row 9 IntentsDB puts instead of
 * 6). The entry format round-trips, reads an older single-key entry, and a chunked abort or apply
 * that ends inside a batch rewrites its entry with the intents left — after a reopen (a disk walk,
 * no cached records) every intent is still found, and none is left behind. The transaction's
 * metadata rides in its reverse entries (no record of its own): a reopen finds it there, and data of
 * the older layout (a metadata record, entries without it) is still read and cleaned up.
 */
import { describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import { MemoryEngine } from '../../docdb/memory-engine';
import { decodeReverseValue, encodeReverseValue, encodeReverseValueWithMeta, intentKey, reverseValueMeta, subDocKey } from '../../docdb/storage-keys';
import { decodeStoredMeta, decodeTxnKey, encodeStoredMeta, txnKey } from '../../docdb/txn-records';
import { ht, key, op, perCellFlags, Statuses, txnMeta } from './docdb-helpers';

const rows = (from: number, n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ type: 'upsert' as const, key: key(from + i), columns: [{ columnId: 1, value: `${tag}${from + i}` }, { columnId: 2, value: BigInt(from + i) }] }));

/** Keys of IntentsDB at or above 'x' (metadata and reverse entries), and the intent keys below it. */
async function txnRecords(e: MemoryEngine): Promise<{ txnKeys: number; intents: number }> {
  let txnKeys = 0;
  let intents = 0;
  const it = e.iterator({});
  for (;;) {
    const x = await it.next();
    if (x === undefined) break;
    if (x[0][0]! >= 0x78) txnKeys++;
    else if (x[0][0]! >= 0x20) intents++; // below: the frontier
  }
  await it.close();
  return { txnKeys, intents };
}

describe('reverse index: one entry per write batch', () => {
  it('reverse index: the entry format round-trips several keys, and a value without the list marker is one intent key (older entries)', () => {
    const k1 = intentKey(subDocKey(Buffer.from([0x30, 1, 2]), { kind: 'row' }), 0x0c, ht(1), 0);
    const k2 = intentKey(subDocKey(Buffer.from([0x30, 1, 2]), { kind: 'row' }), 0x0c, ht(1), 1);
    expect(decodeReverseValue(encodeReverseValue([k1, k2]))).toEqual([k1, k2]);
    expect(decodeReverseValue(encodeReverseValue([k1]))).toEqual([k1]);
    expect(decodeReverseValue(k2)).toEqual([k2]);
    expect(() => decodeReverseValue(Buffer.concat([encodeReverseValue([k1, k2]), Buffer.from([0, 0])]))).toThrow();
    const meta = encodeStoredMeta({ meta: txnMeta('m'), nextWriteId: 7 });
    const withMeta = encodeReverseValueWithMeta(meta, [k1, k2]);
    expect(decodeReverseValue(withMeta)).toEqual([k1, k2]);
    expect(decodeStoredMeta(reverseValueMeta(withMeta)!)).toEqual({ meta: txnMeta('m'), nextWriteId: 7 });
    expect(reverseValueMeta(encodeReverseValue([k1, k2]))).toBeUndefined();
    expect(reverseValueMeta(k1)).toBeUndefined();
    expect(() => decodeReverseValue(withMeta.subarray(0, 3))).toThrow();
  });

  it('reverse index: after a reopen the metadata comes from the reverse entries (write ids continue, the later write wins); a batch without intents keeps a metadata record, deleted with the rest', async () => {
    const regular = new MemoryEngine();
    let intents = new MemoryEngine();
    let db = await DocDb.open({ regular, intents });
    await db.writeIntents(txnMeta('t2'), rows(0, 2, 'a'), ht(10), op(1));
    await db.writeIntents(txnMeta('t3'), [], ht(10), op(2)); // no intents: the metadata has its own record
    expect(await intents.get(txnKey(TxnId('t3')))).toBeDefined();
    await db.close();
    intents = intents.reopen();
    db = await DocDb.open({ regular: regular.reopen(), intents });
    const listed = (await db.listTransactions()).map((t) => [t.meta.txnId, t.intentCount]).sort();
    expect(listed).toEqual([['t2', 2], ['t3', 0]]); // 2 rows, one packed intent each
    // Same rows again in a second batch: its write ids must follow the first batch's (from the entry's metadata).
    await db.writeIntents(txnMeta('t2'), rows(0, 2, 'b'), ht(11), op(3));
    await db.markApplyPending(TxnId('t2'), ht(12), op(4));
    expect((await db.applyIntents(TxnId('t2'), ht(12), op(4))).done).toBe(true);
    await db.removeIntents(TxnId('t3'), op(5));
    const st = new Statuses();
    for (let i = 0; i < 2; i++) expect((await db.getRow(key(i), { readHt: ht(20), resolveStatus: st.resolve }))?.columns.get(1)).toBe(`b${i}`);
    expect(await txnRecords(intents)).toEqual({ txnKeys: 0, intents: 0 });
  });

  it('reverse index: data of the older layout (a metadata record, entries without it) is read after a reopen, applied and cleaned up whole', async () => {
    const regular = new MemoryEngine();
    let intents = new MemoryEngine();
    let db = await DocDb.open({ regular, intents });
    await db.writeIntents(txnMeta('old'), rows(0, 3, 'a'), ht(10), op(1));
    await db.close();
    // Rewrite to the older layout: the metadata in a record of its own, the entry a bare list.
    intents = intents.reopen();
    const it = intents.iterator({ gte: txnKey(TxnId('old')) });
    const olds: Array<[Buffer, Buffer]> = [];
    for (let x = await it.next(); x !== undefined; x = await it.next()) olds.push([Buffer.from(x[0]), Buffer.from(x[1])]);
    await it.close();
    expect(olds).toHaveLength(1);
    const [rk, rv] = olds[0]!;
    expect(decodeTxnKey(rk).txnId).toBe('old');
    await intents.write([
      { type: 'put', key: txnKey(TxnId('old')), value: reverseValueMeta(rv)! },
      { type: 'put', key: rk, value: encodeReverseValue(decodeReverseValue(rv)) },
    ]);
    await intents.close();
    intents = intents.reopen();
    db = await DocDb.open({ regular: regular.reopen(), intents });
    expect((await db.listTransactions()).map((t) => t.meta.txnId)).toEqual(['old']);
    await db.markApplyPending(TxnId('old'), ht(12), op(2));
    expect((await db.applyIntents(TxnId('old'), ht(12), op(2))).done).toBe(true);
    expect(await txnRecords(intents)).toEqual({ txnKeys: 0, intents: 0 });
    expect((await db.getRow(key(1), { readHt: ht(20), resolveStatus: new Statuses().resolve }))?.columns.get(1)).toBe('a1');
  });

  it('reverse index: a 3-row write batch stores one reverse entry carrying the metadata, not one per intent nor a metadata record', async () => {
    const intents = new MemoryEngine();
    const db = await DocDb.open({ regular: new MemoryEngine(), intents });
    await db.writeIntents(txnMeta('t1'), rows(0, 3, 'a'), ht(10), op(1));
    const r = await txnRecords(intents);
    expect(r).toEqual({ txnKeys: 1, intents: 3 }); // 3 rows, one packed intent each (per cell: 3 x (liveness + 2 columns + weak row intent))
    expect(await intents.get(txnKey(TxnId('t1')))).toBeUndefined();
    await db.writeIntents(txnMeta('t1'), rows(3, 1, 'b'), ht(11), op(2));
    expect((await txnRecords(intents)).txnKeys).toBe(2);
    await db.applyIntents(TxnId('t1'), ht(12), op(3));
    expect(await txnRecords(intents)).toEqual({ txnKeys: 0, intents: 0 });
  });

  it('reverse index: a chunked apply and a chunked abort that end inside a batch rewrite its entry; after a reopen the rest is found and nothing is left', async () => {
    let regular = new MemoryEngine();
    let intents = new MemoryEngine();
    // Per cell (txn_packed_intents=false), so a batch has many records: 20 records, one entry.
    let db = await DocDb.open({ regular, intents, flags: perCellFlags() });
    await db.writeIntents(txnMeta('ap'), rows(0, 5, 'a'), ht(10), op(1));
    await db.writeIntents(txnMeta('ab'), rows(100, 5, 'b'), ht(11), op(2));
    await db.markApplyPending(TxnId('ap'), ht(12), op(3));
    const first = await db.applyIntents(TxnId('ap'), ht(12), op(3), 7, 1);
    expect(first).toEqual({ done: false, recordsApplied: 7 });
    // Reopen: no cached records, the reverse entries on disk are all there is.
    await db.close();
    regular = regular.reopen();
    intents = intents.reopen();
    db = await DocDb.open({ regular, intents });
    let p = first;
    for (let i = 0; i < 10 && !p.done; i++) p = await db.applyIntents(TxnId('ap'), ht(12), op(3), 7, 1);
    expect(p.done).toBe(true);
    const st = new Statuses();
    for (let i = 0; i < 5; i++) expect((await db.getRow(key(i), { readHt: ht(20), resolveStatus: st.resolve }))?.columns.get(1)).toBe(`a${i}`);
    // The aborted one, removed in chunks of 3 on a reopened replica (disk walk, entry rewritten each time).
    await db.close();
    regular = regular.reopen();
    intents = intents.reopen();
    const flags = new Flags();
    flags.setFromString('txn_max_apply_batch_records', 3);
    const idb = await DocDb.open({ regular, intents, flags });
    await idb.removeIntents(TxnId('ab'), op(4));
    expect(await txnRecords(intents)).toEqual({ txnKeys: 0, intents: 0 });
    expect((await idb.sizes()).intentsdb.intentCount).toBe(0);
  });
});
