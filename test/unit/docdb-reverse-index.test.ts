/**
 * IntentsDB's reverse index holds one entry per write batch of a transaction, listing that batch's
 * intent keys (issue 62: one entry per intent made a transactional row 9 IntentsDB puts instead of
 * 6). The entry format round-trips, reads an older single-key entry, and a chunked abort or apply
 * that ends inside a batch rewrites its entry with the intents left — after a reopen (a disk walk,
 * no cached records) every intent is still found, and none is left behind.
 */
import { describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import { MemoryEngine } from '../../docdb/memory-engine';
import { decodeReverseValue, encodeReverseValue, intentKey, subDocKey } from '../../docdb/storage-keys';
import { ht, key, op, Statuses, txnMeta } from './docdb-helpers';

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
  });

  it('reverse index: a 3-row write batch stores one reverse entry (plus the metadata), not one per intent', async () => {
    const intents = new MemoryEngine();
    const db = await DocDb.open({ regular: new MemoryEngine(), intents });
    await db.writeIntents(txnMeta('t1'), rows(0, 3, 'a'), ht(10), op(1));
    const r = await txnRecords(intents);
    expect(r).toEqual({ txnKeys: 2, intents: 12 }); // 3 rows x (liveness + 2 columns + weak row intent)
    await db.writeIntents(txnMeta('t1'), rows(3, 1, 'b'), ht(11), op(2));
    expect((await txnRecords(intents)).txnKeys).toBe(3);
    await db.applyIntents(TxnId('t1'), ht(12), op(3));
    expect(await txnRecords(intents)).toEqual({ txnKeys: 0, intents: 0 });
  });

  it('reverse index: a chunked apply and a chunked abort that end inside a batch rewrite its entry; after a reopen the rest is found and nothing is left', async () => {
    let regular = new MemoryEngine();
    let intents = new MemoryEngine();
    let db = await DocDb.open({ regular, intents });
    await db.writeIntents(txnMeta('ap'), rows(0, 5, 'a'), ht(10), op(1)); // 20 records, one entry
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
