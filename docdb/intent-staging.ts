/**
 * Staging one write batch's intent records for IntentsDB (intents-db.ts writeIntentsMany): the
 * intents of each Raft entry, numbered with consecutive write ids, its reverse-index entry carrying
 * the transaction's metadata, and what the in-memory view adds. An upsert becomes one packed intent
 * on its row when `pack` (docdb/packed-intent.ts, flag txn_packed_intents), else a strong intent per
 * cell plus a weak one on the row.
 */
import { assert } from '../common/assert';
import type { HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import { readLockKeys, type OpId, type ReadLocks, type RowOp, type TxnMeta } from './doc-db-api';
import * as enc from './encoding';
import { intentTypesForRead, intentTypesForWrite } from './encoding';
import type { KvOp } from './kv-engine';
import { encodePackedIntentValue, PACKED_CELLS_MAX, type PackCell } from './packed-intent';
import { cellsOf, columnValue } from './row-cells';
import { encodeIntentValue, encodeReverseValueWithMeta, encodeRowDocKey, INTENT_BITS, intentKey, reverseIndexKey, subDocKey, TABLET_LOCK_SUBKEY, withIntentMeta } from './storage-keys';
import { encodeStoredMeta, encodeStoredMetaBinary, txnKey, type StoredTxnMeta } from './txn-records';

/** One Raft entry's intents, as writeIntentsMany takes them. */
export type IntentItem = { txn: TxnMeta; ops: readonly RowOp[]; ht: HybridTime; opId: OpId; reads?: ReadLocks };
/**
 * A transaction's records as written by this process (apply/abort then need no index walk). The
 * records of one write batch share one reverse-index entry (`reverseKey`, the same Buffer) and
 * are contiguous: a chunk that takes only some of them rewrites the entry with the rest (chunkOf).
 */
export interface CachedRecord {
  intentKey: Buffer;
  reverseKey: Buffer;
  value: Buffer;
  /**
   * Known when the record was written by this process: the length of the intent key's SubDocKey
   * prefix and its intent type set, so apply and the index need not parse the key again
   * (intentSubKey).
   */
  subKeyLen?: number;
  typeset?: number;
}

/** A record staged for the batch, with what the intent index needs. */
export type StagedRecord = CachedRecord & { subKey: Buffer; typeset: number };
/**
 * The reverseKey of a record no reverse-index entry lists: the lone intent of a transaction's first
 * write batch here, which carries the transaction's metadata itself (IntentsDb finds it from memory).
 */
export const NO_REVERSE_KEY: Buffer = Buffer.alloc(0);
/** The intent that carries its transaction's metadata (no reverse entry lists it), and whether it is strong. */
export type HeadIntent = { key: Buffer; strong: boolean };
/** What one batch adds for one transaction: its new metadata, records, bytes and strong intents. */
export type StagedTxn = { stored: StoredTxnMeta; recs: StagedRecord[]; bytes: number; strong: number; metaKey: boolean; cells: number; head?: HeadIntent };

/** Puts one Raft entry's intent records into the batch, numbering them with consecutive write ids. */
class ItemWriter {
  /** The intent keys of this entry, for its reverse-index entry. */
  readonly itemKeys: Buffer[] = [];

  constructor(
    private readonly kv: KvOp[],
    private readonly t: StagedTxn,
    private readonly txnId: TxnId,
    private readonly ht: HybridTime,
    public wid: number,
  ) {}

  /** One intent record on `subKey` carrying `value` (undefined: a weak or read intent). */
  put(subKey: Buffer, typeset: number, value: Parameters<typeof encodeIntentValue>[2]): void {
    this.putRecord(subKey, typeset, encodeIntentValue(this.txnId, this.wid, value));
    this.t.cells++;
    this.wid++;
  }

  /** One packed intent on the row `subKey` (its first cell's write id is the current one); `nextWid` follows its ids. */
  putPacked(subKey: Buffer, typeset: number, cells: readonly PackCell[], nextWid: number): void {
    this.putRecord(subKey, typeset, encodePackedIntentValue(this.txnId, cells));
    this.t.cells += cells.length;
    this.wid = nextWid;
  }

  private putRecord(subKey: Buffer, typeset: number, v: Buffer): void {
    const ikey = intentKey(subKey, typeset, this.ht, this.wid);
    this.kv.push({ type: 'put', key: ikey, value: v });
    this.itemKeys.push(ikey);
    // The reverse key is set once the entry's fate is known (stageIntentItem): none for a head intent.
    this.t.recs.push({ intentKey: ikey, reverseKey: NO_REVERSE_KEY, value: v, subKey, typeset });
    this.t.bytes += ikey.length + v.length;
  }
}

/** The liveness column's SubDocKey suffix, and column ids' ('K' + ordered varint), kept per id. */
const LIVENESS_SUFFIX = enc.encodeSubDocKey(Buffer.alloc(0), 'liveness');
const columnSuffixes = new Map<number, Buffer>();
/** Column ids whose suffixes are kept at most (cleared when full). */
const COLUMN_SUFFIXES_MAX = 4096;
function columnSuffix(id: number): Buffer {
  let b = columnSuffixes.get(id);
  if (b === undefined) {
    b = enc.encodeSubDocKey(Buffer.alloc(0), id); // validates the id (INVALID_ARGUMENT)
    if (columnSuffixes.size >= COLUMN_SUFFIXES_MAX) columnSuffixes.clear();
    columnSuffixes.set(id, b);
  }
  return b;
}

/**
 * An upsert as ONE packed intent on its row (strong: it stands for the strong intents of its cells
 * and the weak one on the row, docs/transactions.md "One intent per row"). Its cells are the ones
 * cellsOf gives (liveness, then each column; row-cells.ts), with the write ids the per-cell format
 * gives them — liveness, then the weak intent's (reserved, the first time the row is seen in this
 * batch), then the columns — so apply writes the same versions.
 */
function putPackedUpsert(w: ItemWriter, op: RowOp & { type: 'upsert' }, strong: number, weakDone: Set<string> | undefined): void {
  const docKeyBuf = encodeRowDocKey(op.key);
  const ttl = op.ttlMs;
  let wid = w.wid;
  const pack: PackCell[] = [{ suffix: LIVENESS_SUFFIX, writeId: wid++, value: ttl === undefined ? { type: 'liveness' } : { type: 'liveness', ttlMs: ttl } }];
  // The row's first write in this batch (always, for a batch of one op: no set kept) reserves the weak intent's id.
  const row = weakDone === undefined ? undefined : docKeyBuf.toString('latin1');
  if (row === undefined || !weakDone!.has(row)) {
    weakDone?.add(row!);
    wid++;
  }
  for (const c of op.columns) pack.push({ suffix: columnSuffix(c.columnId), writeId: wid++, value: columnValue(c, ttl) });
  // The row-level SubDocKey is the DocKey itself.
  w.putPacked(docKeyBuf, strong, pack, wid);
}

/** Strong intents on every cell `ops` write, and a weak one on the DocKey of each row with a column write. */
function putWriteIntents(w: ItemWriter, t: StagedTxn, ops: readonly RowOp[], sets: { strong: number; weak: number }, pack: boolean): void {
  const weakDone = new Set<string>();
  for (const op of ops) {
    // An upsert of more cells than one packed intent holds keeps the per-cell format.
    if (pack && op.type === 'upsert' && op.columns.length < PACKED_CELLS_MAX) {
      putPackedUpsert(w, op, sets.strong, ops.length === 1 ? undefined : weakDone);
      t.strong++;
      continue;
    }
    for (const c of cellsOf(op)) {
      w.put(c.subKey, sets.strong, c.value);
      t.strong++;
      // Weak intent on the ancestor DocKey, once per row per batch (a row tombstone is itself at
      // the DocKey level and has no ancestor inside the row).
      const row = c.docKeyBuf.toString('latin1');
      if (c.sub.kind !== 'row' && !weakDone.has(row)) {
        weakDone.add(row);
        w.put(subDocKey(c.docKeyBuf, { kind: 'row' }), sets.weak, undefined);
      }
    }
  }
}

/** Strong read intents on each row read (once per batch) and on the tablet lock key for a scan. */
function putReadIntents(w: ItemWriter, t: StagedTxn, txn: TxnMeta, reads: ReadLocks | undefined): void {
  // Read locks (serializable). Apply moves no value for them; apply and abort delete them.
  const readSet = reads ? intentTypesForRead(txn.isolation, true) : 0;
  if (!reads || readSet === 0) return;
  const done = new Set<string>();
  for (const k of readLockKeys(reads)) {
    const sk = subDocKey(encodeRowDocKey(k), { kind: 'row' });
    const h = sk.toString('latin1');
    if (done.has(h)) continue;
    done.add(h);
    w.put(sk, readSet, undefined);
    t.strong++;
  }
  if (reads.tablet) {
    w.put(TABLET_LOCK_SUBKEY, readSet, undefined);
    t.strong++;
  }
}

/**
 * The lone intent of a transaction's first batch here carries the metadata itself, and no reverse
 * entry is written (1 put and, at clean-up, 1 delete instead of 2 and 2; flag txn_lone_intent_meta,
 * docs/transactions.md "A lone intent carries its transaction"). Rewrites the record staged last.
 */
function carryMetaInLoneIntent(kv: KvOp[], t: StagedTxn, meta: Buffer): void {
  const rec = t.recs[t.recs.length - 1]!;
  const op = kv[kv.length - 1]!;
  assert(op.type === 'put' && op.key === rec.intentKey, 'the lone intent is the batch op staged last');
  const v = withIntentMeta(rec.value, meta);
  kv[kv.length - 1] = { type: 'put', key: rec.intentKey, value: v };
  t.bytes += v.length - rec.value.length;
  rec.value = v;
  t.head = { key: rec.intentKey, strong: (rec.typeset & (INTENT_BITS.STRONG_READ | INTENT_BITS.STRONG_WRITE)) !== 0 };
}

/**
 * Stages one Raft entry: its intents, its reverse-index entry and the txn's new metadata go into
 * `kv`; `staged` keeps what the batch adds per transaction. `known` is the txn's metadata already stored
 * (what this batch staged comes first). `pack`: upserts as packed intents; `loneMeta`: the lone
 * intent of a transaction's first batch carries its metadata (carryMetaInLoneIntent).
 */
export function stageIntentItem(kv: KvOp[], staged: Map<TxnId, StagedTxn>, known: StoredTxnMeta | undefined, item: IntentItem, pack: boolean, loneMeta = false): void {
  const { txn, ops, ht, reads } = item;
  const st = staged.get(txn.txnId);
  const prev = st?.stored ?? known;
  const wid = prev === undefined ? 0 : prev.nextWriteId;
  const t = st ?? { stored: prev ?? { meta: txn, nextWriteId: 0 }, recs: [], bytes: 0, strong: 0, metaKey: false, cells: 0 };
  // One reverse-index entry for this item's intents (unless a head intent), keyed by its first write id.
  const firstRec = t.recs.length;
  const w = new ItemWriter(kv, t, txn.txnId, ht, wid);
  putWriteIntents(w, t, ops, { strong: intentTypesForWrite(txn.isolation, true), weak: intentTypesForWrite(txn.isolation, false) }, pack);
  putReadIntents(w, t, txn, reads);
  t.stored = { meta: prev === undefined ? txn : prev.meta, nextWriteId: w.wid };
  if (loneMeta && prev === undefined && w.itemKeys.length === 1) {
    carryMetaInLoneIntent(kv, t, encodeStoredMetaBinary(t.stored));
  } else if (w.itemKeys.length > 0) {
    const rkey = reverseIndexKey(txnKey(txn.txnId), ht, wid);
    for (let i = firstRec; i < t.recs.length; i++) t.recs[i]!.reverseKey = rkey;
    kv.push({ type: 'put', key: rkey, value: encodeReverseValueWithMeta(encodeStoredMeta(t.stored), w.itemKeys) });
    t.bytes += rkey.length;
  } else {
    // No intents, so no reverse entry to carry the metadata: it gets its own record.
    kv.push({ type: 'put', key: txnKey(txn.txnId), value: encodeStoredMeta(t.stored) });
    t.metaKey = true;
  }
  staged.set(txn.txnId, t);
}
