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
import { decodeStoredMeta, decodeTxnKey, encodeStoredMeta, prefixEnd, txnKey, TXN_PREFIX, type StoredTxnMeta } from './txn-records';

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

/** A transaction's records as written by this process (apply/abort then need no index walk). */
export interface CachedRecord {
  intentKey: Buffer;
  reverseKey: Buffer;
  value: Buffer;
}

/** Bytes of intent records kept in memory per IntentsDb for apply (beyond it: the on-disk walk). */
export const RECORD_CACHE_BYTES_MAX = 32 << 20;

interface TxnEntry {
  stored: StoredTxnMeta;
  /** Every record of the txn, in write order; undefined when not all are in memory (written before open, or over budget). */
  records: CachedRecord[] | undefined;
  bytes: number;
}

export class IntentsDb {
  /**
   * In memory, authoritative from open on (every change goes through this class or apply.ts):
   * the metadata of every transaction with records here.
   */
  private readonly txns = new Map<TxnId, TxnEntry>();
  private cachedBytes = 0;

  private constructor(
    readonly db: FrontierDb,
    /** Strong intents stored (exact: maintained on every write and recounted on open). */
    public intentCount: number,
  ) {}

  static async open(db: FrontierDb): Promise<IntentsDb> {
    const idb = new IntentsDb(db, 0);
    await idb.load();
    return idb;
  }

  /** One pass over the stored records: strong intent count, txn metadata. */
  private async load(): Promise<void> {
    const it = this.db.engine.iterator({ gte: INTENTS_DATA_START });
    try {
      for (;;) {
        const e = await it.next();
        if (e === undefined) break;
        const k = Buffer.from(e[0]);
        if (k[0]! < TXN_PREFIX) {
          const p = parseIntentKey(k, docKeyLength(k));
          if (isStrongIntent(p.typeset)) this.intentCount++;
        } else if (k[0] === TXN_PREFIX) {
          const { txnId, end } = decodeTxnKey(k);
          if (end === k.length) this.txns.set(txnId, { stored: decodeStoredMeta(e[1]), records: undefined, bytes: 0 });
        }
      }
    } finally {
      await it.close();
    }
  }

  /** Stored metadata of `txnId`, or undefined when it has no records here. */
  storedMeta(txnId: TxnId): StoredTxnMeta | undefined {
    return this.txns.get(txnId)?.stored;
  }

  /** Every record of `txnId` when all are in memory (else walk reverseEntries). */
  cachedRecords(txnId: TxnId): readonly CachedRecord[] | undefined {
    return this.txns.get(txnId)?.records;
  }

  /** apply.ts deleted some of the txn's records (and, when `metaDeleted`, its metadata) durably. */
  noteDeleted(txnId: TxnId, metaDeleted: boolean): void {
    if (metaDeleted) {
      const t = this.txns.get(txnId);
      if (t) this.cachedBytes -= t.bytes;
      this.txns.delete(txnId);
    }
  }

  async writeIntents(txn: TxnMeta, ops: readonly RowOp[], ht: HybridTime, opId: OpId): Promise<void> {
    if (alreadyHolds(this.db.frontier, opId)) return;
    const mkey = txnKey(txn.txnId);
    const prevEntry = this.txns.get(txn.txnId);
    const prev = prevEntry?.stored;
    let wid = prev === undefined ? 0 : prev.nextWriteId;
    const sets = intentTypeSets(txn.isolation);
    const kv: KvOp[] = [];
    const recs: CachedRecord[] = [];
    let strong = 0;
    let bytes = 0;
    const weakDone = new Set<string>();
    const put = (subKey: Buffer, typeset: number, value: Buffer): void => {
      const ikey = intentKey(subKey, typeset, ht, wid);
      const rkey = reverseIndexKey(mkey, ht, wid);
      kv.push({ type: 'put', key: ikey, value });
      kv.push({ type: 'put', key: rkey, value: ikey });
      recs.push({ intentKey: ikey, reverseKey: rkey, value });
      bytes += ikey.length + rkey.length + value.length;
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
    const stored: StoredTxnMeta = { meta: prev === undefined ? txn : prev.meta, nextWriteId: wid };
    kv.push({ type: 'put', key: mkey, value: encodeStoredMeta(stored) });
    await this.db.write(kv, opId);
    this.intentCount += strong;
    // Cache the records for apply while within budget; a txn that ever misses keeps walking the index.
    const entry: TxnEntry = prevEntry ?? { stored, records: [], bytes: 0 };
    entry.stored = stored;
    if (entry.records && this.cachedBytes + bytes <= RECORD_CACHE_BYTES_MAX) {
      for (const r of recs) entry.records.push(r);
      entry.bytes += bytes;
      this.cachedBytes += bytes;
    } else if (entry.records) {
      this.cachedBytes -= entry.bytes;
      entry.records = undefined;
      entry.bytes = 0;
    }
    this.txns.set(txn.txnId, entry);
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
