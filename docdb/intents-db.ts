/**
 * IntentsDB: provisional records of running transactions (DESIGN §4), three kinds of record:
 *   intent          SubDocKey-without-time + 13 + intent-type-set + DocHybridTime → txn id, write id, value
 *   reverse index   'x' + txn id + DocHybridTime → intent key      (lets apply/abort find every intent)
 *   metadata        'x' + txn id → TxnMeta + next write id
 * Strong intents go on the written sub-keys, weak ones on the ancestor (the DocKey), so two writers
 * meet at the DocKey whenever one of them touches the whole row.
 *
 * Write ids are unique within a transaction (the metadata carries the next one across batches), so
 * the versions apply writes at (commitHt, writeId) never collide and later writes win.
 */
import type { HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import { type Isolation, type OpId, type RowOp, type TxnMeta } from './doc-db-api';
import { alreadyHolds } from './frontier';
import type { FrontierDb } from './frontier-db';
import type { KvOp } from './kv-engine';
import { cellsOf } from './row-cells';
import { intentTypesForWrite } from './encoding';
import { subDocKey, encodeIntentValue, intentKey, parseIntentKey, reverseIndexKey, docKeyLength, INTENTS_DATA_START, INTENT_BITS } from './storage-keys';
import { decodeStoredMeta, encodeStoredMeta, prefixEnd, txnKey } from './txn-records';

/** Intent type sets a write takes: strong on the written key, weak on its ancestors. */
export function intentTypeSets(isolation: Isolation): { strong: number; weak: number } {
  return { strong: intentTypesForWrite(isolation, true), weak: intentTypesForWrite(isolation, false) };
}

export function isStrongWrite(typeset: number): boolean {
  return (typeset & INTENT_BITS.STRONG_WRITE) !== 0;
}

export function isStrongIntent(typeset: number): boolean {
  return (typeset & (INTENT_BITS.STRONG_READ | INTENT_BITS.STRONG_WRITE)) !== 0;
}

export class IntentsDb {
  private constructor(
    readonly db: FrontierDb,
    /** Strong intents stored (exact: maintained on every write and recounted on open). */
    public intentCount: number,
  ) {}

  static async open(db: FrontierDb): Promise<IntentsDb> {
    return new IntentsDb(db, await IntentsDb.countStrongIntents(db));
  }

  private static async countStrongIntents(db: FrontierDb): Promise<number> {
    const it = db.engine.iterator({ gte: INTENTS_DATA_START, lt: Buffer.from([0x78]) });
    let n = 0;
    try {
      for (;;) {
        const e = await it.next();
        if (e === undefined) break;
        const k = Buffer.from(e[0]);
        if (isStrongIntent(parseIntentKey(k, docKeyLength(k)).typeset)) n++;
      }
    } finally {
      await it.close();
    }
    return n;
  }

  async writeIntents(txn: TxnMeta, ops: readonly RowOp[], ht: HybridTime, opId: OpId): Promise<void> {
    if (alreadyHolds(this.db.frontier, opId)) return;
    const mkey = txnKey(txn.txnId);
    const prev = await this.db.engine.get(mkey);
    let wid = prev === undefined ? 0 : decodeStoredMeta(prev).nextWriteId;
    const sets = intentTypeSets(txn.isolation);
    const kv: KvOp[] = [];
    let strong = 0;
    const weakDone = new Set<string>();
    const put = (subKey: Buffer, typeset: number, value: Buffer): void => {
      const ikey = intentKey(subKey, typeset, ht, wid);
      kv.push({ type: 'put', key: ikey, value });
      kv.push({ type: 'put', key: reverseIndexKey(mkey, ht, wid), value: ikey });
      wid++;
    };
    for (const op of ops) {
      for (const c of cellsOf(op)) {
        put(c.subKey, sets.strong, encodeIntentValue(txn.txnId, wid, c.value));
        strong++;
        // Weak intent on the ancestor DocKey, once per row per batch (a row tombstone is itself at
        // the DocKey level and has no ancestor inside the row).
        const hex = c.docKeyBuf.toString('hex');
        if (c.sub.kind !== 'row' && !weakDone.has(hex)) {
          weakDone.add(hex);
          put(subDocKey(c.docKeyBuf, { kind: 'row' }), sets.weak, encodeIntentValue(txn.txnId, wid, undefined));
        }
      }
    }
    kv.push({ type: 'put', key: mkey, value: encodeStoredMeta({ meta: prev === undefined ? txn : decodeStoredMeta(prev).meta, nextWriteId: wid }) });
    await this.db.write(kv, opId);
    this.intentCount += strong;
  }

  /** Reverse-index entries of `txnId` in write order-independent key order, at most `max`. */
  async reverseEntries(txnId: TxnId, max: number): Promise<Array<{ reverseKey: Buffer; intentKey: Buffer }>> {
    const p = txnKey(txnId);
    const it = this.db.engine.iterator({ gte: Buffer.concat([p, Buffer.from([0x00])]), lt: prefixEnd(p) });
    const out: Array<{ reverseKey: Buffer; intentKey: Buffer }> = [];
    try {
      while (out.length < max) {
        const e = await it.next();
        if (e === undefined) break;
        out.push({ reverseKey: Buffer.from(e[0]), intentKey: Buffer.from(e[1]) });
      }
    } finally {
      await it.close();
    }
    return out;
  }
}
