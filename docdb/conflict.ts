/**
 * Conflict detection for a transaction about to write `ops` (YugabyteDB's ResolveTransactionConflicts):
 *  - other transactions' intents on the same sub-keys whose type sets conflict with ours (every intent
 *    also places weak intents on its ancestors, so comparing exact sub-keys is enough: a row delete
 *    meets a column write at the DocKey, strong vs weak);
 *  - committed versions newer than our read time on the keys we write (snapshot isolation's
 *    write-write rule: first committer wins).
 * With a status resolver, intents of committed transactions count as committed versions at their
 * commit time, and aborted transactions' intents are ignored. A packed intent (one per upserted row,
 * packed-intent.ts) is a strong intent on the row's DocKey, met there by every write of the row.
 *
 * Read locks (a serializable transaction's `reads`): a strong read intent on each row read meets the
 * weak write intent every write of a row's column leaves on its DocKey, and a row delete's strong
 * one. The tablet lock of a serializable scan (a strong read intent on TABLET_LOCK_SUBKEY) meets
 * every write: a writer checks that key as if it held a weak write intent there (never stored: one
 * record per write batch saved), and the scan checks every write intent of the tablet. A scan
 * confined to one hash key of a table with range columns takes a hash-key lock instead (a strong read
 * intent on that hash key's DocKey without range components, storage-keys hashKeyLock): every write
 * of a row under it implies a weak write intent there, and the lock checks the write intents of every
 * row under it.
 */
import type { HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import { readLockKeys, type Conflict, type DocKey, type ReadLocks, type RowOp, type StatusResolver, type TxnMeta, type TxnStatusAnswer } from './doc-db-api';
import { intentTypesForRead } from './encoding';
import type { IntentsDb } from './intents-db';
import { intentTypeSets } from './intents-db';
import type { RegularDb } from './regular-db';
import { cellsOf } from './row-cells';
import {
  decodeDocKeyBuf,
  splitIntentValue,
  docKeyLength,
  encodeRowDocKey,
  hashKeyLock,
  hashKeyRowsPrefix,
  intentTypesConflict,
  parseIntentKeyToSubKey,
  parseRegularKey,
  subDocKey,
  INTENTS_DATA_END,
  INTENTS_DATA_START,
  INTENT_TYPE_SET_TAG,
  TABLET_LOCK_SUBKEY,
} from './storage-keys';
import { prefixEnd } from './txn-records';

/** A cell a conflict is reported on: the row's DocKey, decoded and encoded. */
type At = { docKey: DocKey; docKeyBuf: Buffer };
/** A sub-key we would lock, with our type set on it (and the row a conflict there is reported on). */
type Lock = { subKey: Buffer; typeset: number; cell: At };
/** The cells one row of `ops` writes, and whether one of them deletes the row. */
type RowWrites = { cells: ReturnType<typeof cellsOf>; deletes: boolean };

/** Collects conflicts without duplicates and asks the status resolver once per transaction. */
class ConflictSink {
  readonly out: Conflict[] = [];
  private readonly seen = new Set<string>();
  private readonly statuses = new Map<TxnId, Promise<TxnStatusAnswer>>();

  constructor(
    private readonly readHt: HybridTime,
    private readonly resolveStatus: StatusResolver | undefined,
  ) {}

  /** The (memoised) status of `id`, or undefined without a resolver. */
  status(id: TxnId): Promise<TxnStatusAnswer> | undefined {
    if (!this.resolveStatus) return undefined;
    let p = this.statuses.get(id);
    if (!p) this.statuses.set(id, (p = this.resolveStatus(id, this.readHt)));
    return p;
  }

  /** Records `c` unless a conflict with the same `id` was recorded already. */
  add(c: Conflict, id: string): void {
    if (!this.seen.has(id)) {
      this.seen.add(id);
      this.out.push(c);
    }
  }

  /** Our lock on `cell` meets an intent of `theirTxn`: a conflict unless it aborted or committed before our read. */
  async meet(cell: At, theirTxn: TxnId): Promise<void> {
    const st = await this.status(theirTxn);
    if (st?.status === 'ABORTED') return;
    if (st?.status === 'COMMITTED') {
      if (st.commitHt > this.readHt) this.add({ type: 'committedAfterRead', key: cell.docKey, commitHt: st.commitHt }, `c${cell.docKeyBuf.toString('hex')}`);
      return;
    }
    this.add({ type: 'intent', txnId: theirTxn, key: cell.docKey }, `i${theirTxn}/${cell.docKeyBuf.toString('hex')}`);
  }
}

/** Adds `typeset` to the lock on `subKey` (keeping the cell already reported there, if any). */
function orLock(locks: Map<string, Lock>, subKey: Buffer, typeset: number, cell: At, keepCell: boolean): void {
  const h = subKey.toString('hex');
  const prev = locks.get(h);
  locks.set(h, { subKey, typeset: (prev?.typeset ?? 0) | typeset, cell: keepCell ? (prev?.cell ?? cell) : cell });
}

/**
 * The write locks of `ops` (strong on each cell, weak on the row of a column write) and the cells of
 * each row. `packed`: an upsert is stored as one packed intent, strong on its row, and checked so:
 * strong on the row stands for the strong intents on its cells and the weak one on the row (any
 * intent on a cell of the row comes with a weak one on the row, which a strong one meets whenever
 * the cell's would), and is stricter — it also meets another transaction's writes of other columns
 * of the row (docs/transactions.md "One intent per row").
 */
function writeLocks(ops: readonly RowOp[], sets: { strong: number; weak: number }, packed: boolean): { locks: Map<string, Lock>; rows: Map<string, RowWrites> } {
  const locks = new Map<string, Lock>();
  const rows = new Map<string, RowWrites>();
  for (const op of ops) {
    const pack = packed && op.type === 'upsert';
    const cells = cellsOf(op);
    if (pack && cells.length > 0) orLock(locks, subDocKey(cells[0]!.docKeyBuf, { kind: 'row' }), sets.strong, cells[0]!, true);
    for (const c of cells) {
      if (!pack) locks.set(c.subKey.toString('hex'), { subKey: c.subKey, typeset: sets.strong, cell: c });
      const rk = c.docKeyBuf.toString('hex');
      const r = rows.get(rk) ?? { cells: [], deletes: false };
      r.cells.push(c);
      if (c.sub.kind === 'row') r.deletes = true;
      rows.set(rk, r);
      if (c.sub.kind !== 'row' && !pack) orLock(locks, subDocKey(c.docKeyBuf, { kind: 'row' }), sets.weak, c, false);
    }
  }
  return { locks, rows };
}

/** Adds the weak intent a row with range components implies on its hash key's lock, and our read locks. */
function impliedAndReadLocks(locks: Map<string, Lock>, rows: Map<string, RowWrites>, weak: number, reads: ReadLocks | undefined, readSet: number): void {
  // A row with range components implies a weak write intent on its hash key's lock (never stored):
  // a serializable scan of that hash key.
  for (const r of rows.values()) {
    const k = r.cells[0]!.docKey;
    const lock = k.range.length > 0 ? hashKeyLock(k) : undefined;
    if (!lock) continue;
    orLock(locks, subDocKey(encodeRowDocKey(lock), { kind: 'row' }), weak, r.cells[0]!, true);
  }
  if (reads && readSet !== 0) {
    for (const k of readLockKeys(reads)) {
      const docKeyBuf = encodeRowDocKey(k);
      orLock(locks, subDocKey(docKeyBuf, { kind: 'row' }), readSet, { docKey: k, docKeyBuf }, true);
    }
  }
}

/** Meets every other transaction's conflicting intent on each of our locked sub-keys. */
async function checkLocks(intents: IntentsDb, txn: TxnMeta, locks: Map<string, Lock>, sink: ConflictSink): Promise<void> {
  for (const { subKey, typeset, cell } of locks.values()) {
    // The in-memory intent index answers without an engine iterator (three thread-pool hops).
    const indexed = intents.intentsOn(subKey);
    if (indexed !== undefined) {
      for (const x of indexed) {
        if (!intentTypesConflict(typeset, x.typeset) || x.txnId === txn.txnId) continue;
        await sink.meet(cell, x.txnId);
      }
      continue;
    }
    const p = Buffer.concat([subKey, Buffer.from([INTENT_TYPE_SET_TAG])]);
    const it = intents.db.engine.iterator({ gte: p, lt: prefixEnd(p) });
    try {
      for (;;) {
        const e = await it.next();
        if (e === undefined) break;
        const theirs = e[0][p.length]!;
        if (!intentTypesConflict(typeset, theirs)) continue;
        const v = splitIntentValue(e[1]);
        if (v.txnId === txn.txnId) continue;
        await sink.meet(cell, v.txnId);
      }
    } finally {
      await it.close();
    }
  }
}

/** A scan's lock meets every other transaction's write intent under it (tablet lock or hash-key locks). */
async function checkScanLocks(intents: IntentsDb, txn: TxnMeta, reads: ReadLocks | undefined, readSet: number, sink: ConflictSink): Promise<void> {
  // The tablet lock meets every intent of the tablet, a hash-key lock those of the rows under that
  // hash key.
  const scanned: Array<{ lo: Buffer; hi: Buffer }> = [];
  if (reads?.tablet) scanned.push({ lo: INTENTS_DATA_START, hi: INTENTS_DATA_END });
  for (const k of reads?.hashKeys ?? []) {
    const p = hashKeyRowsPrefix(k);
    scanned.push({ lo: p, hi: prefixEnd(p) });
  }
  if (scanned.length === 0 || readSet === 0) return;
  const check = async (key: Buffer, typeset: number, theirTxn: TxnId): Promise<void> => {
    if (theirTxn === txn.txnId || !intentTypesConflict(readSet, typeset)) return;
    if (!scanned.some((r) => key.compare(r.lo) >= 0 && key.compare(r.hi) < 0)) return;
    const docKeyBuf = key.subarray(0, docKeyLength(key));
    await sink.meet({ docKey: decodeDocKeyBuf(docKeyBuf), docKeyBuf }, theirTxn);
  };
  const all = intents.allIndexed();
  if (all !== undefined) {
    for (const x of all) await check(x.key, x.typeset, x.txnId);
    return;
  }
  for (const r of reads?.tablet ? scanned.slice(0, 1) : scanned) {
    const it = intents.db.engine.iterator({ gte: r.lo, lt: r.hi });
    try {
      for (;;) {
        const e = await it.next();
        if (e === undefined) break;
        const key = Buffer.from(e[0]);
        await check(key, parseIntentKeyToSubKey(key).typeset, splitIntentValue(e[1]).txnId);
      }
    } finally {
      await it.close();
    }
  }
}

/** Reports committed versions newer than `readHt` on what each row of ours writes (first committer wins). */
async function checkCommittedAfterRead(regular: RegularDb, rows: Map<string, RowWrites>, readHt: HybridTime, sink: ConflictSink): Promise<void> {
  // Committed versions newer than readHt on what we write: the row tombstone and the sub-keys we
  // write; for a row delete, every sub-key of the row.
  for (const [rk, r] of rows) {
    const docKeyBuf = r.cells[0]!.docKeyBuf;
    // Nothing of this row is newer than the read time (a bound RegularDb keeps in memory): no walk.
    if (regular.newestVersionBound(docKeyBuf) <= readHt) continue;
    const written = new Set(r.cells.map((c) => (c.sub.kind === 'column' ? `c${c.sub.id}` : c.sub.kind)));
    const it = regular.db.engine.iterator({ gte: docKeyBuf, lt: prefixEnd(docKeyBuf) });
    try {
      for (;;) {
        const e = await it.next();
        if (e === undefined) break;
        const v = parseRegularKey(Buffer.from(e[0]), docKeyBuf.length);
        if (v.ht <= readHt) continue;
        const id = v.sub.kind === 'column' ? `c${v.sub.id}` : v.sub.kind;
        if (r.deletes || v.sub.kind === 'row' || written.has(id)) {
          sink.add({ type: 'committedAfterRead', key: r.cells[0]!.docKey, commitHt: v.ht }, `c${rk}`);
          break;
        }
      }
    } finally {
      await it.close();
    }
  }
}

export async function findConflicts(
  regular: RegularDb,
  intents: IntentsDb,
  txn: TxnMeta,
  ops: readonly RowOp[],
  readHt: HybridTime,
  resolveStatus?: StatusResolver,
  /** Only other transactions' intents (a non-transactional write: no read time to compare with). */
  intentsOnly = false,
  /** Read locks `txn` is about to take (serializable). */
  reads?: ReadLocks,
): Promise<Conflict[]> {
  // Fast path: no strong intent stored means no intent at all (weak intents exist only beside a
  // strong one of the same batch).
  if ((intentsOnly || ops.length === 0) && intents.intentCount === 0) return [];
  const sink = new ConflictSink(readHt, resolveStatus);
  const sets = intentTypeSets(txn.isolation);
  // Sub-keys we would lock, with our type set on each (and the row a conflict there is reported on).
  // A plain write stores nothing: it checks as the per-cell format would (intentsOnly).
  const { locks, rows } = writeLocks(ops, sets, !intentsOnly && intents.packsRows());
  const readSet = intentTypesForRead(txn.isolation, true);
  impliedAndReadLocks(locks, rows, sets.weak, reads, readSet);
  // Every write implies a weak write intent on the tablet lock key: a serializable scan's read lock.
  const firstCell = locks.values().next().value?.cell;
  if (ops.length > 0 && firstCell !== undefined) locks.set(TABLET_LOCK_SUBKEY.toString('hex'), { subKey: TABLET_LOCK_SUBKEY, typeset: sets.weak, cell: firstCell });

  await checkLocks(intents, txn, locks, sink);
  await checkScanLocks(intents, txn, reads, readSet, sink);
  if (intentsOnly) return sink.out;
  await checkCommittedAfterRead(regular, rows, readHt, sink);
  return sink.out;
}
