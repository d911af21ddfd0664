/**
 * IntentsDB: provisional records of running transactions (docs/architecture.md §DocDB), three kinds of record:
 *   intent          SubDocKey-without-time + 13 + intent-type-set + DocHybridTime → txn id, write id, value
 *   reverse index   'x' + txn id + DocHybridTime → TxnMeta + next write id, intent keys (lets
 *                   apply/abort find every intent; one entry per write batch of the transaction, at
 *                   its first write id: issue 62, where one entry per intent made a transactional
 *                   row 9 puts instead of 6; the metadata as of that batch rides in it, so a
 *                   transaction costs no record of its own: one put and one delete fewer)
 *   metadata        'x' + txn id → TxnMeta + next write id: only for a batch without intents, and
 *                   in data written before the metadata moved into the reverse entries
 * A transaction's first write batch here whose intents are ONE record writes no reverse entry: that
 * intent carries the metadata after its header (a "head" intent; intent-staging.ts, flag
 * txn_lone_intent_meta). Nothing on disk lists it: this class keeps its key in memory (found again
 * at open, which reads every intent anyway) and hands it out with the reverse entries.
 * Strong intents go on the written sub-keys, weak ones on the ancestor (the DocKey), so two writers
 * meet at the DocKey whenever one of them touches the whole row.
 *
 * Write ids are unique within a transaction (the metadata carries the next one across batches), so
 * the versions apply writes at (commitHt, writeId) never collide and later writes win.
 */
import { createHash } from 'node:crypto';
import type { HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import { readLockKeys, type Isolation, type OpId, type ReadLocks, type RowOp, type TxnMeta } from './doc-db-api';
import { alreadyHolds } from './frontier';
import type { FrontierDb } from './frontier-db';
import { NO_REVERSE_KEY, stageIntentItem, type CachedRecord, type HeadIntent, type StagedTxn } from './intent-staging';
export type { CachedRecord } from './intent-staging';
import type { KvOp } from './kv-engine';
import { intentTypesForWrite } from './encoding';
import { perCellRecords } from './packed-intent';
import {
  subDocKey,
  splitIntentValue,
  encodeRowDocKey,
  encodeReverseValue,
  encodeReverseValueWithMeta,
  decodeReverseValue,
  reverseValueMeta,
  intentValueMeta,
  parseIntentKey,
  parseIntentKeyToSubKey,
  docKeyLength,
  INTENTS_DATA_START,
  INTENT_BITS,
  TABLET_LOCK_SUBKEY,
} from './storage-keys';
import { decodeStoredMeta, decodeTxnKey, encodeStoredMeta, prefixEnd, txnKey, TXN_PREFIX, type StoredTxnMeta } from './txn-records';

/** Stands for a reverse entry whose intent is missing (a damaged replica), and ends a transaction's part of a digest. */
const MISSING_VALUE = Buffer.from('missing');
const TXN_END = Buffer.from([0xff, 0xff, 0xff, 0xff]);

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


/** The SubDocKey (a view into the intent key) and type set of a record's intent. */
export function intentSubKey(r: { intentKey: Buffer; subKeyLen?: number; typeset?: number }): { subKey: Buffer; typeset: number } {
  if (r.subKeyLen !== undefined && r.typeset !== undefined) return { subKey: r.intentKey.subarray(0, r.subKeyLen), typeset: r.typeset };
  return parseIntentKeyToSubKey(r.intentKey);
}

/**
 * One chunk of at most `max` of `records` (contiguous per reverse entry, whole entries: the cached
 * records or reverseEntries' answer) and the reverse-index writes that go with deleting its
 * intents, in the same IntentsDB batch: a delete of every entry the chunk ends, and — when the
 * chunk ends inside an entry — a rewrite of that entry listing the intents left, so no entry ever
 * outlives its intents nor loses one that is still there. `last`: nothing is left after it.
 */
export function chunkOf<T extends { intentKey: Buffer; reverseKey: Buffer }>(records: readonly T[], max: number, more: boolean, meta?: Buffer): { part: T[]; reverseOps: KvOp[]; last: boolean } {
  const n = Math.min(max, records.length);
  const part = records.slice(0, n);
  const reverseOps: KvOp[] = [];
  for (let i = 0; i < n; i++) {
    const k = part[i]!.reverseKey;
    if (k === NO_REVERSE_KEY) continue; // a head intent: no entry lists it
    if (i + 1 < n && sameKey(part[i + 1]!.reverseKey, k)) continue;
    if (n < records.length && i === n - 1 && sameKey(records[n]!.reverseKey, k)) {
      const rest: Buffer[] = [];
      for (let j = n; j < records.length && sameKey(records[j]!.reverseKey, k); j++) rest.push(records[j]!.intentKey);
      // The rewrite keeps the transaction's metadata (`meta`, encoded) when the entries carry it.
      reverseOps.push({ type: 'put', key: k, value: meta === undefined ? encodeReverseValue(rest) : encodeReverseValueWithMeta(meta, rest) });
    } else {
      reverseOps.push({ type: 'del', key: k });
    }
  }
  return { part, reverseOps, last: n === records.length && !more };
}

function toBuf(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

function sameKey(a: Buffer, b: Buffer): boolean {
  return a === b || a.equals(b);
}

/** Bytes of intent records kept in memory per IntentsDb for apply (beyond it: the on-disk walk). */
export const RECORD_CACHE_BYTES_MAX = 32 << 20;
/** Bytes of the intent index per IntentsDb (beyond it: conflict checks iterate the engine). */
export const INTENT_INDEX_BYTES_MAX = 64 << 20;
/** Bytes charged per indexed intent beyond its key (object, array slot, map share). */
const INDEX_ENTRY_OVERHEAD_BYTES = 96;

/** One intent as the index knows it. */
export interface IndexedIntent {
  key: Buffer;
  typeset: number;
  txnId: TxnId;
}

interface TxnEntry {
  stored: StoredTxnMeta;
  /** Every record of the txn, in write order; undefined when not all are in memory (written before open, or over budget). */
  records: CachedRecord[] | undefined;
  bytes: number;
  /**
   * Cells the cached records carry (a packed intent counts its cells, any other record 1): what an
   * apply inside another batch writes, bounded like the per-cell format's records (applyNowOps).
   * Never lowered by a partial apply: an upper bound.
   */
  cells: number;
  /** The metadata has a record of its own ('x' + txn id) on disk, which the last delete must take. */
  metaKey: boolean;
  /** The head intent (it carries the metadata; no reverse entry lists it), until it is deleted. */
  head?: HeadIntent;
}

export class IntentsDb {
  /**
   * In memory, authoritative from open on (every change goes through this class or apply.ts):
   * the metadata of every transaction with records here.
   */
  private readonly txns = new Map<TxnId, TxnEntry>();
  private cachedBytes = 0;
  /** Intent index (see intentsOn): sub-key bytes (latin1) → the intents stored on it. */
  private readonly bySubKey = new Map<string, IndexedIntent[]>();
  private indexBytes = 0;
  private indexComplete = true;

  private constructor(
    readonly db: FrontierDb,
    /** Strong intents stored (exact: maintained on every write and recounted on open). */
    public intentCount: number,
    private readonly indexBytesMax: number,
    /** Write upserts as packed intents (docdb/packed-intent.ts; flag txn_packed_intents)? */
    private readonly packRows: () => boolean,
    /** Does the lone intent of a transaction's first batch carry its metadata (flag txn_lone_intent_meta)? */
    private readonly loneMeta: () => boolean,
  ) {}

  /** Are upserts written as packed intents now (conflict checks then lock their rows: conflict.ts)? */
  packsRows(): boolean {
    return this.packRows();
  }

  /**
   * `indexBytesMax`: budget of the intent index (0: never indexed; conflict checks iterate).
   * `packRows`: write upserts as packed intents (read at each write; default: yes). `loneMeta`: a
   * lone intent of a transaction's first batch carries its metadata (read at each write; default: yes).
   */
  static async open(db: FrontierDb, opts: { indexBytesMax?: number; packRows?: () => boolean; loneMeta?: () => boolean } = {}): Promise<IntentsDb> {
    const idb = new IntentsDb(db, 0, opts.indexBytesMax ?? INTENT_INDEX_BYTES_MAX, opts.packRows ?? (() => true), opts.loneMeta ?? (() => true));
    idb.indexComplete = idb.indexBytesMax > 0;
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
          const strong = isStrongIntent(p.typeset);
          if (strong) this.intentCount++;
          const txnId = splitIntentValue(e[1]).txnId;
          this.indexAdd(p.subKey, p.typeset, k, txnId);
          const m = intentValueMeta(e[1]);
          if (m !== undefined) this.adoptMeta(txnId, decodeStoredMeta(m), false, { key: k, strong });
        } else if (k[0] === TXN_PREFIX) {
          this.loadTxnRecord(k, e[1]);
        }
      }
    } finally {
      await it.close();
    }
  }

  /**
   * A metadata record or a reverse entry at open: the transaction's metadata is its own record's or
   * that of its reverse entries (each carries it as of its batch: the highest next write id wins).
   */
  private loadTxnRecord(k: Buffer, value: Uint8Array): void {
    const { txnId, end } = decodeTxnKey(k);
    const own = end === k.length;
    const m = own ? value : reverseValueMeta(value);
    if (m === undefined) return; // an older reverse entry: its transaction's metadata has its own record
    this.adoptMeta(txnId, decodeStoredMeta(m), own);
  }

  /** Metadata found at open (a record, a reverse entry or a head intent): the highest next write id wins. */
  private adoptMeta(txnId: TxnId, stored: StoredTxnMeta, own: boolean, head?: HeadIntent): void {
    const t = this.txns.get(txnId);
    if (t === undefined) {
      this.txns.set(txnId, { stored, records: undefined, bytes: 0, cells: 0, metaKey: own, ...(head ? { head } : {}) });
      return;
    }
    if (stored.nextWriteId > t.stored.nextWriteId) t.stored = stored;
    t.metaKey ||= own;
    if (head) t.head = head;
  }

  /** `txnId`'s head intent with its metadata, while it is in the in-memory view. */
  headOf(txnId: TxnId): { meta: TxnMeta; strong: boolean } | undefined {
    const t = this.txns.get(txnId);
    return t?.head === undefined ? undefined : { meta: t.stored.meta, strong: t.head.strong };
  }

  /** Transactions whose head intent is on disk (no reverse entry lists it): listTransactions adds them. */
  *headTxns(): IterableIterator<{ txnId: TxnId; meta: StoredTxnMeta; head: HeadIntent }> {
    for (const [txnId, t] of this.txns) if (t.head) yield { txnId, meta: t.stored, head: t.head };
  }

  /** Must the last delete of `txnId`'s records take a metadata record of its own ('x' + txn id)? */
  hasMetaKey(txnId: TxnId): boolean {
    return this.txns.get(txnId)?.metaKey ?? false;
  }

  /** `txnId`'s metadata encoded as the reverse entries carry it (a rewritten entry keeps it). */
  encodedMeta(txnId: TxnId): Buffer | undefined {
    const t = this.txns.get(txnId);
    return t === undefined ? undefined : encodeStoredMeta(t.stored);
  }

  /** Stored metadata of `txnId`, or undefined when it has no records here. */
  storedMeta(txnId: TxnId): StoredTxnMeta | undefined {
    return this.txns.get(txnId)?.stored;
  }

  /** Every record of `txnId` when all are in memory (else walk reverseEntries). */
  cachedRecords(txnId: TxnId): readonly CachedRecord[] | undefined {
    return this.txns.get(txnId)?.records;
  }

  /** The cells `txnId`'s cached records carry (see TxnEntry.cells); 0 when not all are in memory. */
  cachedCells(txnId: TxnId): number {
    const t = this.txns.get(txnId);
    return t?.records === undefined ? 0 : t.cells;
  }

  /** apply.ts deleted some of the txn's records (and, when `metaDeleted`, its metadata) durably. */
  noteDeleted(txnId: TxnId, metaDeleted: boolean, records: ReadonlyArray<{ intentKey: Buffer; subKeyLen?: number; typeset?: number }>): void {
    this.indexRemove(records);
    const h = this.txns.get(txnId)?.head;
    if (h !== undefined && !metaDeleted && records.some((r) => r.intentKey === h.key || r.intentKey.equals(h.key))) delete this.txns.get(txnId)!.head;
    if (metaDeleted) {
      const t = this.txns.get(txnId);
      if (t) this.cachedBytes -= t.bytes;
      this.txns.delete(txnId);
      this.maybeReenableIndex();
    }
  }

  async writeIntents(txn: TxnMeta, ops: readonly RowOp[], ht: HybridTime, opId: OpId, reads?: ReadLocks): Promise<void> {
    await this.writeIntentsMany([{ txn, ops, ht, opId, ...(reads ? { reads } : {}) }]);
  }

  /**
   * Several Raft entries' intents (of one or more transactions, in log order) in ONE engine batch:
   * one RocksDB call instead of one per entry. Entries already below the frontier (replay) are
   * skipped. Write ids continue across the entries of one transaction.
   */
  async writeIntentsMany(items: ReadonlyArray<{ txn: TxnMeta; ops: readonly RowOp[]; ht: HybridTime; opId: OpId; reads?: ReadLocks }>): Promise<void> {
    const kv: KvOp[] = [];
    const staged = new Map<TxnId, StagedTxn>();
    let last: OpId | undefined;
    const pack = this.packRows();
    const loneMeta = this.loneMeta();
    for (const item of items) {
      if (alreadyHolds(this.db.frontier, item.opId)) continue;
      last = item.opId;
      stageIntentItem(kv, staged, this.txns.get(item.txn.txnId)?.stored, item, pack, loneMeta);
    }
    if (last === undefined) return;
    await this.db.write(kv, last);
    this.noteWritten(staged);
  }

  /** After the batch is durable: counts, indexes and (within budget) caches what it added per txn. */
  private noteWritten(staged: Map<TxnId, StagedTxn>): void {
    for (const [txnId, t] of staged) {
      this.intentCount += t.strong;
      for (const r of t.recs) this.indexAdd(r.subKey, r.typeset, r.intentKey, txnId);
      // Cache the records for apply while within budget; a txn that ever misses keeps walking the index.
      const entry: TxnEntry = this.txns.get(txnId) ?? { stored: t.stored, records: [], bytes: 0, cells: 0, metaKey: false };
      entry.stored = t.stored;
      entry.metaKey ||= t.metaKey;
      if (t.head) entry.head = t.head;
      if (entry.records && this.cachedBytes + t.bytes <= RECORD_CACHE_BYTES_MAX) {
        for (const r of t.recs) entry.records.push({ intentKey: r.intentKey, reverseKey: r.reverseKey, value: r.value, subKeyLen: r.subKey.length, typeset: r.typeset });
        entry.bytes += t.bytes;
        entry.cells += t.cells;
        this.cachedBytes += t.bytes;
      } else if (entry.records) {
        this.cachedBytes -= entry.bytes;
        entry.records = undefined;
        entry.bytes = 0;
      }
      this.txns.set(txnId, entry);
    }
  }

  // ---- the intent index: sub-key → intents stored on it (conflict checks without iterators) -----

  /**
   * The intents stored on exactly `subKey` (any type set, any transaction), from memory; undefined
   * when the index is not complete (over its budget since the last time IntentsDB held no
   * transaction): then the caller iterates the engine. The array is a copy.
   */
  intentsOn(subKey: Buffer): IndexedIntent[] | undefined {
    if (!this.indexComplete) return undefined;
    const l = this.bySubKey.get(subKey.toString('latin1'));
    return l === undefined ? [] : l.slice();
  }

  /** Every indexed intent (any key, type set, transaction); undefined when the index is not complete. */
  allIndexed(): IndexedIntent[] | undefined {
    if (!this.indexComplete) return undefined;
    const out: IndexedIntent[] = [];
    for (const l of this.bySubKey.values()) out.push(...l);
    return out;
  }

  /**
   * Does `txnId` hold a strong read intent on every row of `reads` (and on the tablet lock key when
   * `reads.tablet`), by the index? False when the index is not complete (the caller then locks again).
   */
  holdsReadLocks(txnId: TxnId, reads: ReadLocks): boolean {
    if (!this.indexComplete) return false;
    const holds = (sk: Buffer): boolean => (this.bySubKey.get(sk.toString('latin1')) ?? []).some((x) => x.txnId === txnId && (x.typeset & INTENT_BITS.STRONG_READ) !== 0);
    if (reads.tablet && !holds(TABLET_LOCK_SUBKEY)) return false;
    for (const k of readLockKeys(reads)) if (!holds(subDocKey(encodeRowDocKey(k), { kind: 'row' }))) return false;
    return true;
  }

  /** Sub-keys in the intent index, and whether it is complete (tests, console). */
  indexStats(): { subKeys: number; bytes: number; complete: boolean } {
    return { subKeys: this.bySubKey.size, bytes: this.indexBytes, complete: this.indexComplete };
  }

  private indexAdd(subKey: Buffer, typeset: number, key: Buffer, txnId: TxnId): void {
    if (!this.indexComplete) return;
    const k = subKey.toString('latin1');
    const l = this.bySubKey.get(k);
    const e: IndexedIntent = { key, typeset, txnId };
    if (l === undefined) this.bySubKey.set(k, [e]);
    else l.push(e);
    this.indexBytes += INDEX_ENTRY_OVERHEAD_BYTES + key.length + (l === undefined ? k.length : 0);
    if (this.indexBytes > this.indexBytesMax) {
      // Too many intents to index: conflict checks walk the engine until IntentsDB empties again.
      this.indexComplete = false;
      this.bySubKey.clear();
      this.indexBytes = 0;
    }
  }

  private indexRemove(records: ReadonlyArray<{ intentKey: Buffer; subKeyLen?: number; typeset?: number }>): void {
    if (!this.indexComplete) return;
    for (const r of records) {
      const key = r.intentKey;
      const k = r.subKeyLen !== undefined ? key.toString('latin1', 0, r.subKeyLen) : parseIntentKeyToSubKey(key).subKey.toString('latin1');
      const l = this.bySubKey.get(k);
      if (l === undefined) continue;
      // The index holds the very Buffer the record was written with (noteWritten), unless loaded at open.
      let i = l.findIndex((e) => e.key === key);
      if (i < 0) i = l.findIndex((e) => e.key.equals(key));
      if (i < 0) continue;
      l.splice(i, 1);
      this.indexBytes -= INDEX_ENTRY_OVERHEAD_BYTES + key.length;
      if (l.length === 0) {
        this.bySubKey.delete(k);
        this.indexBytes -= k.length;
      }
    }
  }

  /** IntentsDB holds no transaction: the (empty) index is complete again. */
  private maybeReenableIndex(): void {
    if (!this.indexComplete && this.txns.size === 0 && this.indexBytesMax > 0) {
      this.indexComplete = true;
      this.bySubKey.clear();
      this.indexBytes = 0;
    }
  }

  /**
   * A digest of the provisional records of every transaction in IntentsDB's view except those
   * `skip` names (the caller's: committed ones being applied, whose records each replica moves on its
   * own schedule): per transaction in id order, its id, then each record's intent key and value in
   * key order — as the per-cell format holds them, weak intents left out (perCellRecords: a replica
   * that packed the rows agrees with one that did not). Replicas that applied the same Raft log hold the same records of the transactions
   * nobody committed or removed yet, so their digests are equal; the records come from memory when
   * cached, else from the engine (reverse index, then the values).
   */
  async pendingDigest(skip: (txnId: TxnId) => boolean): Promise<{ sha256: string; txns: number; records: number }> {
    const h = createHash('sha256');
    const u32 = Buffer.alloc(4);
    const part = (b: Uint8Array): void => {
      u32.writeUInt32BE(b.length);
      h.update(u32).update(b);
    };
    let txns = 0;
    let records = 0;
    const ids = [...this.txns.keys()].filter((id) => !skip(id)).sort();
    for (const id of ids) {
      const t = this.txns.get(id);
      if (t === undefined) continue; // applied or removed meanwhile (the caller sees its applied index move)
      let recs: Array<{ key: Buffer; value: Uint8Array | undefined }>;
      if (t.records) {
        recs = t.records.map((r) => ({ key: r.intentKey, value: r.value }));
      } else {
        const { entries } = await this.reverseEntries(id, Number.MAX_SAFE_INTEGER);
        const keys = entries.map((e) => e.intentKey);
        const values = keys.length === 0 ? [] : this.db.engine.getMany ? await this.db.engine.getMany(keys) : await Promise.all(keys.map((k) => this.db.engine.get(k)));
        recs = keys.map((key, i) => ({ key, value: values[i] }));
      }
      recs = recs.flatMap((r) => (r.value === undefined ? [r] : perCellRecords(r.key, toBuf(r.value), isStrongIntent)));
      recs.sort((a, b) => Buffer.compare(a.key, b.key));
      part(Buffer.from(id, 'latin1'));
      for (const r of recs) {
        part(r.key);
        part(r.value ?? MISSING_VALUE);
      }
      h.update(TXN_END);
      txns++;
      records += recs.length;
    }
    return { sha256: h.digest('hex'), txns, records };
  }

  /**
   * The intents `txnId`'s reverse index lists, as (entry, intent key) pairs in key order of the
   * entries: whole entries until at least `max` pairs (at least one entry), and whether more entries
   * follow. A chunk that deletes them all may delete their entries (see wholeEntriesChunk).
   */
  async reverseEntries(txnId: TxnId, max: number): Promise<{ entries: Array<{ reverseKey: Buffer; intentKey: Buffer }>; more: boolean }> {
    const p = txnKey(txnId);
    const it = this.db.engine.iterator({ gte: Buffer.concat([p, Buffer.from([0x00])]), lt: prefixEnd(p) });
    const entries: Array<{ reverseKey: Buffer; intentKey: Buffer }> = [];
    // The head intent first (no entry lists it): a chunk always takes it with the first entries.
    const head = this.txns.get(txnId)?.head;
    if (head !== undefined) entries.push({ reverseKey: NO_REVERSE_KEY, intentKey: head.key });
    let more = false;
    try {
      for (;;) {
        const e = await it.next();
        if (e === undefined) break;
        if (entries.length >= max) {
          more = true;
          break;
        }
        const reverseKey = Buffer.from(e[0]);
        for (const intentKey of decodeReverseValue(e[1])) entries.push({ reverseKey, intentKey });
      }
    } finally {
      await it.close();
    }
    return { entries, more };
  }
}
