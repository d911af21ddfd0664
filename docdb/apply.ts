/**
 * Apply and remove: moving a committed transaction's intents into RegularDB, or dropping an aborted
 * one's. Both walk the reverse index in chunks of at most `chunkRecordsMax` records.
 *
 * Crash safety of apply (two databases, no cross-database atomicity):
 *  1. RegularDB batch: the chunk's versions at (commitHt, writeId) + the apply state (synced);
 *  2. IntentsDB batch: delete the chunk's intents and reverse entries (+ metadata on the last chunk);
 *  3. after the last chunk, RegularDB batch: delete the apply state.
 * A crash between any two steps leaves an apply state and/or reverse entries; re-running apply
 * rewrites the same versions (same keys, same values: idempotent) and continues. A transaction with
 * neither is already applied, so re-applying it is a no-op.
 *
 * Small transactions — applied together by applyIntentsMany, or inside the RegularDB batch of their
 * APPLY entry's Raft round (applyNowOps) — may defer steps 2 and 3 (DeferredCleanup): their versions
 * are written without a sync, and their intent deletes wait until one RegularDB sync covers many
 * applies; the apply-state deletes follow the intent deletes. Nothing reads the lingering intents as
 * pending meanwhile: in memory they are gone at once (see applyIntentsMany). The transactions applied
 * inside one batch share ONE apply-group record in it instead of an apply state each (applyGroupOps):
 * a restart turns the record's transactions whose intents are still on disk back into apply states
 * and resumes them (DocDb.open, resumeApplies).
 */
import { assert } from '../common/assert';
import type { HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import type { ApplyProgress, OpId, TxnMeta } from './doc-db-api';
import type { IntentsDb } from './intents-db';
import { chunkOf, intentSubKey, isStrongIntent, isStrongWrite, type CachedRecord } from './intents-db';
import { NO_REVERSE_KEY } from './intent-staging';
import type { KvEngine, KvOp } from './kv-engine';
import { OP_ID_ZERO, opIdMax } from './frontier';
import type { RegularDb } from './regular-db';
import { forEachPackedCell, isPacked } from './packed-intent';
import { cellVersionKey, splitIntentValue, versionKey } from './storage-keys';
import { applyGroupKey, applyStateKey, encodeApplyGroup, encodeApplyState, txnKey, type ApplyState } from './txn-records';

export interface ApplyHooks {
  /** Called after each chunk is durable in both databases (tests, fault injection). */
  afterApplyChunk?: (txnId: TxnId, recordsApplied: number) => Promise<void> | void;
}

async function getMany(engine: KvEngine, keys: Buffer[]): Promise<Array<Uint8Array | undefined>> {
  if (engine.getMany) return engine.getMany(keys);
  return Promise.all(keys.map((k) => engine.get(k)));
}

const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * The writes that move `records` (with their intent values) of a committed transaction: a version at
 * (commitHt, writeId) per strong write into `rops`, the intent deletes into `iops` (the caller adds
 * the reverse-index writes of the same chunk to that batch: chunkOf). Returns the strong intents among them.
 */
function moveRecords(
  txnId: TxnId,
  commitHt: HybridTime,
  records: ReadonlyArray<{ intentKey: Buffer; reverseKey: Buffer; subKeyLen?: number; typeset?: number; value?: Buffer }>,
  values: ReadonlyArray<Uint8Array | undefined> | undefined,
  rops: KvOp[],
  iops: KvOp[],
): number {
  let strong = 0;
  for (let i = 0; i < records.length; i++) {
    const e = records[i]!;
    // `values` undefined: the records are cached ones, each with its value.
    const raw = values === undefined ? e.value : values[i];
    assert(raw !== undefined, `reverse index of ${txnId} points at a missing intent`);
    const { subKey, typeset } = intentSubKey(e);
    if (isStrongWrite(typeset)) {
      // The value moves as encoded: an intent holds it in RegularDB's own format.
      const v = splitIntentValue(raw);
      assert(v.encoded !== undefined && v.txnId === txnId, 'strong intent without a value or of another txn');
      if (isPacked(v.encoded)) {
        // A packed row: a version per cell, at the write id the per-cell format gives it (packed-intent.ts).
        forEachPackedCell(v.encoded, (suffix, writeId, value) => rops.push({ type: 'put', key: cellVersionKey(subKey, suffix, commitHt, writeId), value }));
      } else {
        rops.push({ type: 'put', key: versionKey(subKey, commitHt, v.writeId), value: v.encoded });
      }
    }
    if (isStrongIntent(typeset)) strong++;
    iops.push({ type: 'del', key: e.intentKey });
  }
  return strong;
}

/**
 * moveRecords for every record of a transaction whose records are all in memory, plus the delete of
 * its metadata. Returns what drops it from IntentsDB's in-memory view (call once its versions are
 * written; the deletes may still wait, see DeferredCleanup).
 */
function moveWholeTxn(intents: IntentsDb, txnId: TxnId, commitHt: HybridTime, records: readonly CachedRecord[], rops: KvOp[], iops: KvOp[]): { forget: () => void; head?: DeferredHead } {
  const strong = moveRecords(txnId, commitHt, records, undefined, rops, iops);
  // A lone head intent has no reverse entry to delete.
  if (records.length > 1 || records[0]?.reverseKey !== NO_REVERSE_KEY) for (const o of chunkOf(records, records.length, false).reverseOps) iops.push(o);
  if (intents.hasMetaKey(txnId)) iops.push({ type: 'del', key: txnKey(txnId) });
  const recs = records.slice();
  const head = intents.headOf(txnId);
  const forget = (): void => {
    intents.intentCount -= strong;
    intents.noteDeleted(txnId, true, recs);
  };
  return head === undefined ? { forget } : { forget, head };
}

/**
 * A transaction's head intent (it carries the metadata; no reverse entry lists it) waiting for its
 * deferred delete: listTransactions shows the transaction applying meanwhile, as it shows one whose
 * reverse entries are still on disk.
 */
export type DeferredHead = { meta: TxnMeta; strong: boolean };

export async function applyIntents(
  regular: RegularDb,
  intents: IntentsDb,
  txnId: TxnId,
  commitHt: HybridTime,
  opId: OpId,
  chunkRecordsMax: number,
  chunksMax: number,
  hooks: ApplyHooks,
): Promise<ApplyProgress> {
  assert(chunkRecordsMax >= 1 && chunksMax >= 1, 'apply chunk limits must be positive');
  const stateKey = applyStateKey(txnId);
  let state = regular.applyState(txnId);
  const stored = intents.storedMeta(txnId);
  if (state === undefined && stored === undefined) return { done: true, recordsApplied: 0 };
  if (state !== undefined) assert(state.commitHt === commitHt, `apply of ${txnId} resumed with a different commit time`);
  const meta = state?.meta ?? stored!.meta;
  let applied = state?.recordsApplied ?? 0;

  for (let chunk = 0; chunk < chunksMax; chunk++) {
    // The records written by this process are in memory; else walk the reverse index on disk.
    const cached = intents.cachedRecords(txnId);
    let mine: Array<{ intentKey: Buffer; reverseKey: Buffer }>;
    let values: Array<Uint8Array | undefined> | undefined;
    let c: { reverseOps: KvOp[]; last: boolean };
    if (cached) {
      const cc = chunkOf(cached, chunkRecordsMax, false, intents.encodedMeta(txnId));
      c = cc;
      mine = cc.part;
      values = undefined; // cached records carry their values
    } else {
      const r = await intents.reverseEntries(txnId, chunkRecordsMax);
      const cc = chunkOf(r.entries, chunkRecordsMax, r.more, intents.encodedMeta(txnId));
      c = cc;
      mine = cc.part;
      values = await getMany(intents.db.engine, mine.map((e) => e.intentKey));
    }
    const last = c.last;
    const rops: KvOp[] = [];
    const iops: KvOp[] = [];
    const strong = moveRecords(txnId, commitHt, mine, values, rops, iops);
    for (const o of c.reverseOps) iops.push(o);
    applied += mine.length;
    state = { meta, commitHt, opId, recordsApplied: applied };
    rops.push({ type: 'put', key: stateKey, value: encodeApplyState(state) });
    // Durable before the intents go (another database): they must never be gone while their versions
    // are not. The sync is group-committed with every other apply of this tablet (syncBarrier).
    await regular.db.write(rops, opId);
    await regular.db.syncBarrier();
    regular.setApplyState(state);
    if (last && intents.hasMetaKey(txnId)) iops.push({ type: 'del', key: txnKey(txnId) });
    await intents.db.write(iops, opId);
    intents.intentCount -= strong;
    intents.noteDeleted(txnId, last, mine);
    if (cached && !last) (cached as CachedRecord[]).splice(0, mine.length);
    if (last) {
      await regular.db.write([{ type: 'del', key: stateKey }], opId);
      regular.deleteApplyState(txnId);
      await hooks.afterApplyChunk?.(txnId, applied);
      return { done: true, recordsApplied: applied };
    }
    await hooks.afterApplyChunk?.(txnId, applied);
    // One event loop serves every tablet: let other work run between chunks.
    await yieldToLoop();
  }
  return { done: false, recordsApplied: applied };
}

/**
 * The clean-ups of applies that wait for one RegularDB sync to cover many of them: the intent
 * deletes (IntentsDB may only lose an intent once the version it moved to is durable in RegularDB,
 * another database) and, after those are written, the apply-state deletes (a restart must still
 * find the state of a transaction whose intents are still on disk, and resume — rewrite the same
 * versions, delete the intents — rather than take them for a pending transaction's).
 */
export class DeferredCleanup {
  private ops: KvOp[] = [];
  private opId: OpId = OP_ID_ZERO;
  private txnIds: TxnId[] = [];
  /** RegularDB records (apply states, apply-group records) to delete once the intent deletes are written. */
  private afterKeys: Buffer[] = [];
  private firstAtMs = 0;
  /** Applied transactions whose intents are still on disk (waiting, or being deleted) → commit time, head intent. */
  private readonly applied = new Map<TxnId, { commitHt: HybridTime; head?: DeferredHead }>();
  /** Transactions whose clean-up waits. */
  txns = 0;

  add(txns: ReadonlyArray<{ txnId: TxnId; commitHt: HybridTime; head?: DeferredHead }>, iops: readonly KvOp[], opId: OpId, nowMs: number, afterKeys: readonly Buffer[]): void {
    if (this.txns === 0) this.firstAtMs = nowMs;
    for (const o of iops) this.ops.push(o);
    for (const k of afterKeys) this.afterKeys.push(k);
    for (const t of txns) {
      this.txnIds.push(t.txnId);
      this.applied.set(t.txnId, t.head === undefined ? { commitHt: t.commitHt } : { commitHt: t.commitHt, head: t.head });
    }
    this.opId = opIdMax(this.opId, opId);
    this.txns += txns.length;
  }

  /** How long the oldest waiting clean-up has waited (0 when none waits). */
  ageMs(nowMs: number): number {
    return this.txns === 0 ? 0 : nowMs - this.firstAtMs;
  }

  /** The commit time of an applied transaction whose intents are still on disk (listings show it applying). */
  commitHtOf(txnId: TxnId): HybridTime | undefined {
    return this.applied.get(txnId)?.commitHt;
  }

  /** The waiting transactions whose head intent is still on disk (no reverse entry lists it). */
  *heads(): IterableIterator<{ txnId: TxnId; head: DeferredHead }> {
    for (const [txnId, a] of this.applied) if (a.head) yield { txnId, head: a.head };
  }

  /** Everything waiting, handed to the caller (which must write it: flushDeferredCleanup). */
  take(): { ops: KvOp[]; opId: OpId; txnIds: TxnId[]; afterKeys: Buffer[] } | undefined {
    if (this.txns === 0) return undefined;
    const t = { ops: this.ops, opId: this.opId, txnIds: this.txnIds, afterKeys: this.afterKeys };
    this.ops = [];
    this.opId = OP_ID_ZERO;
    this.txnIds = [];
    this.afterKeys = [];
    this.txns = 0;
    return t;
  }

  /** The intents of these transactions are deleted. */
  deleted(txnIds: readonly TxnId[]): void {
    for (const id of txnIds) this.applied.delete(id);
  }
}

/**
 * Write the waiting clean-ups: one RegularDB sync (shared with any other running), the intent
 * deletes as one IntentsDB batch, then the apply-state and apply-group deletes as riders of the next
 * RegularDB write.
 */
export async function flushDeferredCleanup(regular: RegularDb, intents: IntentsDb, d: DeferredCleanup): Promise<void> {
  const t = d.take();
  if (t === undefined) return;
  await regular.db.syncBarrier();
  await intents.db.write(t.ops, t.opId);
  d.deleted(t.txnIds);
  regular.db.addRiders(t.afterKeys.map((key) => ({ type: 'del' as const, key })));
}

/**
 * Apply several committed transactions. Those whose records are all in memory and fit one chunk go
 * together: ONE RegularDB batch with every version, then ONE IntentsDB batch deleting every intent,
 * reverse entry and metadata. Without `deferred`, the versions are synced first (they must be
 * durable before the intents go) and the apply states are deleted as riders of a later RegularDB
 * write (FrontierDb.addRiders): a crash before that leaves a state whose intents are gone, and
 * resuming it at open is a no-op apply. With `deferred`, the versions are not synced and both
 * deletes wait in `deferred` (see DeferredCleanup) — while IntentsDB's in-memory view (metadata,
 * intent index, strong intent count) and the apply states in memory drop the transactions at once,
 * so no conflict check or apply takes the lingering intents for live ones (a reader iterating
 * IntentsDB meets them as committed, the same versions as RegularDB's). The others go one by one
 * through applyIntents. Each transaction must have been marked pending first.
 */
export async function applyIntentsMany(
  regular: RegularDb,
  intents: IntentsDb,
  items: ReadonlyArray<{ txnId: TxnId; commitHt: HybridTime; opId: OpId }>,
  chunkRecordsMax: number,
  hooks: ApplyHooks,
  one: (txnId: TxnId, commitHt: HybridTime, opId: OpId) => Promise<unknown>,
  deferred?: DeferredCleanup,
): Promise<void> {
  const group: Array<{ txnId: TxnId; commitHt: HybridTime; records: readonly CachedRecord[]; head?: DeferredHead }> = [];
  const rest: Array<{ txnId: TxnId; commitHt: HybridTime; opId: OpId }> = [];
  const seen = new Set<TxnId>();
  let opId: OpId | undefined;
  for (const it of items) {
    if (seen.has(it.txnId)) continue;
    seen.add(it.txnId);
    const state = regular.applyState(it.txnId);
    const stored = intents.storedMeta(it.txnId);
    if (state === undefined && stored === undefined) continue; // applied already
    if (state !== undefined) assert(state.commitHt === it.commitHt, `apply of ${it.txnId} resumed with a different commit time`);
    const records = intents.cachedRecords(it.txnId);
    if (records === undefined || records.length > chunkRecordsMax || intents.cachedCells(it.txnId) > chunkRecordsMax || state === undefined) {
      rest.push(it);
      continue;
    }
    group.push({ txnId: it.txnId, commitHt: it.commitHt, records });
    opId = opId === undefined ? it.opId : opIdMax(opId, it.opId);
  }
  if (group.length > 0 && opId !== undefined) {
    const rops: KvOp[] = [];
    const iops: KvOp[] = [];
    const forget = group.map((g) => {
      const m = moveWholeTxn(intents, g.txnId, g.commitHt, g.records, rops, iops);
      if (m.head) g.head = m.head;
      return m.forget;
    });
    await regular.db.write(rops, opId, deferred === undefined);
    if (deferred === undefined) await intents.db.write(iops, opId);
    group.forEach((g, i) => {
      forget[i]!();
      regular.deleteApplyState(g.txnId);
    });
    if (deferred === undefined) regular.db.addRiders(group.map((g) => ({ type: 'del' as const, key: applyStateKey(g.txnId) })));
    else deferred.add(group, iops, opId, performance.now(), group.map((g) => applyStateKey(g.txnId)));
    for (const g of group) await hooks.afterApplyChunk?.(g.txnId, g.records.length);
  }
  for (const it of rest) await one(it.txnId, it.commitHt, it.opId);
}

/** A small transaction applied inside another RegularDB batch (applyNowOps). */
export interface InPlaceApply {
  txnId: TxnId;
  commitHt: HybridTime;
  opId: OpId;
  /** Its versions: into the batch. */
  ops: KvOp[];
  /** Its intent, reverse-entry and metadata deletes: deferred (DeferredCleanup). */
  iops: KvOp[];
  /** Drops it from IntentsDB's in-memory view; call after the batch is written. */
  forget: () => void;
  head?: DeferredHead;
}

/**
 * The writes that apply a small committed transaction inside another RegularDB batch (the one of the
 * Raft round that carries its APPLY entry), instead of marking it pending for a later apply: its
 * versions. The batch also carries the apply-group record of all such transactions (applyGroupOps),
 * which stays on disk until their deferred intent deletes are written (a restart in between resumes
 * their applies). Undefined when the transaction is already marked, has nothing to apply, or its
 * records are not all in memory or exceed one chunk — then mark it (applyPendingOps).
 */
export function applyNowOps(regular: RegularDb, intents: IntentsDb, txnId: TxnId, commitHt: HybridTime, opId: OpId, chunkRecordsMax: number): InPlaceApply | undefined {
  if (regular.applyState(txnId) !== undefined) return undefined;
  const stored = intents.storedMeta(txnId);
  const records = intents.cachedRecords(txnId);
  // Bounded in cells (a packed intent counts its cells), as the per-cell format's records were.
  if (stored === undefined || records === undefined || intents.cachedCells(txnId) > chunkRecordsMax) return undefined;
  const ops: KvOp[] = [];
  const iops: KvOp[] = [];
  const m = moveWholeTxn(intents, txnId, commitHt, records, ops, iops);
  return { txnId, commitHt, opId, ops, iops, ...m };
}

/**
 * The apply-group record of the in-place applies of one RegularDB batch (write it in that batch)
 * and `done`, to call after the batch is written: it drops them from IntentsDB's in-memory view and
 * hands their intent deletes, and the record's own delete after those, to `deferred`.
 */
export function applyGroupOps(items: readonly InPlaceApply[], seq: number, deferred: DeferredCleanup): { op: KvOp; done: () => void } {
  assert(items.length > 0, 'an apply group needs a transaction');
  let opId: OpId = OP_ID_ZERO;
  for (const i of items) opId = opIdMax(opId, i.opId);
  const key = applyGroupKey(opId.index, seq);
  return {
    op: { type: 'put', key, value: encodeApplyGroup(items) },
    done: () => {
      const iops: KvOp[] = [];
      for (const i of items) {
        i.forget();
        for (const o of i.iops) iops.push(o);
      }
      deferred.add(items, iops, opId, performance.now(), [key]);
    },
  };
}

/**
 * The apply-state write that marks `txnId` pending (markApplyPending, to join another batch):
 * undefined when there is nothing to apply, [] when it is already marked. Call `done` after the
 * batch is written.
 */
export function applyPendingOps(regular: RegularDb, intents: IntentsDb, txnId: TxnId, commitHt: HybridTime, opId: OpId): { ops: KvOp[]; done: () => void } | undefined {
  if (regular.applyState(txnId) !== undefined) return { ops: [], done: () => undefined };
  const stored = intents.storedMeta(txnId);
  if (stored === undefined) return undefined;
  const state: ApplyState = { meta: stored.meta, commitHt, opId, recordsApplied: 0 };
  return { ops: [{ type: 'put', key: applyStateKey(txnId), value: encodeApplyState(state) }], done: () => regular.setApplyState(state) };
}

/**
 * Record that `txnId` committed at `commitHt` and must be applied, before any intent moves: a
 * persisted apply state with nothing applied yet. A restart then finishes the apply (resumeApplies)
 * even when the Raft entry that ordered it lies below the databases' frontier and is not replayed —
 * which lets the host move the intents later, off its ordered apply path. No-op when already
 * recorded, or when nothing is left to apply (idempotent).
 *
 * Not synced: the entry is skipped at replay only when RegularDB's frontier passed it, and every
 * RegularDB batch carrying such a frontier is written after this one, so (the RocksDB WAL recovering
 * a prefix) no surviving frontier can be past this entry while this record is lost.
 */
export async function markApplyPending(regular: RegularDb, intents: IntentsDb, txnId: TxnId, commitHt: HybridTime, opId: OpId): Promise<boolean> {
  const m = applyPendingOps(regular, intents, txnId, commitHt, opId);
  if (m === undefined) return false;
  if (m.ops.length > 0) await regular.db.write(m.ops, opId);
  m.done();
  return true;
}

/** Delete an aborted transaction's intents, reverse entries and metadata. Idempotent. */
export async function removeIntents(intents: IntentsDb, txnId: TxnId, opId: OpId, chunkRecordsMax: number): Promise<void> {
  // A transaction IntentsDB's in-memory view no longer holds (applied, its deferred deletes still
  // waiting: DeferredCleanup) has only leftovers on disk: they go, but its strong intents were
  // already taken off the count when it was applied — counting them again drove intentCount below
  // the intents really stored, down to 0, and reads then skipped IntentsDB (stale reads of committed,
  // not yet applied writes; lost updates). Found by tessera verify --nemesis rebuild,kill: a replica
  // caught up by replaying a log of APPLY and REMOVE entries, then led.
  const live = intents.storedMeta(txnId) !== undefined;
  // Bounded: each round deletes up to chunkRecordsMax entries; the loop ends when none remain.
  for (;;) {
    const cached = intents.cachedRecords(txnId);
    const walked = cached ? undefined : await intents.reverseEntries(txnId, chunkRecordsMax);
    const meta = intents.encodedMeta(txnId);
    const { part: entries, reverseOps, last } = cached ? chunkOf(cached, chunkRecordsMax, false, meta) : chunkOf(walked!.entries, chunkRecordsMax, walked!.more, meta);
    const ops: KvOp[] = [];
    let strong = 0;
    for (const e of entries) {
      const { typeset } = intentSubKey(e);
      if (isStrongIntent(typeset)) strong++;
      ops.push({ type: 'del', key: e.intentKey });
    }
    for (const o of reverseOps) ops.push(o);
    // Leftovers of a transaction the in-memory view already dropped may include a metadata record.
    if (last && (intents.hasMetaKey(txnId) || !live)) ops.push({ type: 'del', key: txnKey(txnId) });
    await intents.db.write(ops, opId);
    if (live) intents.intentCount -= strong;
    intents.noteDeleted(txnId, last, entries);
    if (cached && !last) (cached as CachedRecord[]).splice(0, entries.length);
    if (last) return;
    await yieldToLoop();
  }
}
