/**
 * A replica's apply stage (docs/architecture.md §Apply path): the committed entries of one Raft
 * ready, in log order, go to the engines in as few write batches as the log order allows —
 * consecutive RegularDB writes (WRITE, TXN_STATUS rows, and the apply-pending marks of APPLY_TXN) as
 * ONE batch, the WRITE_INTENTS as ONE IntentsDB batch: one RocksDB call and thread-pool hop each
 * instead of one per entry. An APPLY_TXN waits for its own transaction's intents of this batch to be
 * written; REMOVE_TXN flushes both groups (it is rare).
 *
 * Restart: entries at or below a database's frontier (the floors) are already in it, so replay is
 * idempotent.
 */
import type { HybridClock } from '../../common/hybrid-clock';
import type { HybridTime } from '../../common/hybrid-time';
import type { Logger } from '../../common/log';
import type { ApplyMark, DocDbApi, OpId, ReadLocks, RowOp, TxnMeta } from '../../docdb';
import type { Entry } from '../../raft';
import type { ApplyLagLog } from './apply-lag-log';
import type { IntentApplier } from './intent-applier';
import type { MvccClock } from './mvcc-clock';
import { forgottenIds, RECORD_COLUMN_ID, RecordStatus, recordKey } from './participant/txn-record';
import type { TxnParticipant } from './participant/txn-participant';
import type { RetryableRequests } from './retryable-requests';
import type { RowLockTable } from './row-locks';
import type { TabletEvents } from './tablet-events';
import type { TabletFaults } from './test-faults';
import { decodeTabletOp, requestsOf, type RequestTag, type TabletOp } from './tablet-op';

/** One WRITE_INTENTS entry waiting in the batch's IntentsDB write group. */
interface IntentsGroupItem {
  txn: TxnMeta;
  ops: readonly RowOp[];
  ht: HybridTime;
  opId: OpId;
  reads?: ReadLocks;
}

/** One WRITE / TXN_STATUS / APPLY_TXN entry waiting in the batch's RegularDB write group. */
interface RegularGroupItem {
  op: Extract<TabletOp, { type: 'WRITE' | 'TXN_STATUS' | 'APPLY_TXN' }>;
  opId: OpId;
  /** undefined when RegularDB already holds it (replay below the floor). */
  write: { ops: readonly RowOp[]; ht: HybridTime; opId: OpId } | undefined;
}

/** The write groups of one batch of entries. */
interface Groups {
  regular: RegularGroupItem[];
  intents: IntentsGroupItem[];
}

export interface ApplyPipelineDeps {
  tabletId: string;
  clock: HybridClock;
  log: Logger;
  db(): DocDbApi;
  mvcc: MvccClock;
  participant: TxnParticipant;
  applier: IntentApplier;
  faults: TabletFaults;
  retryable: RetryableRequests;
  rowLocks: RowLockTable;
  /** The tablet was split: no entry after SPLIT is applied. */
  isSplit(): boolean;
  changeSchema(op: Extract<TabletOp, { type: 'CHANGE_SCHEMA' }>, opId: OpId): void;
  /** Carry out a SPLIT entry (everything before it written and applied). */
  split(op: Extract<TabletOp, { type: 'SPLIT' }>, index: number): Promise<void>;
  events(): TabletEvents | undefined;
  /** On a status tablet's replica: when it applied each transaction's COMMITTED record (the commit point). */
  commitPoints: ApplyLagLog;
  metrics: { entriesApplied: number };
}

export class ApplyPipeline {
  /** Entries at or below these op ids are already in the database (restart replay / snapshot). */
  private regularFloor: OpId = { term: 0, index: 0 };
  private intentsFloor: OpId = { term: 0, index: 0 };

  constructor(private readonly deps: ApplyPipelineDeps) {}

  /** The databases' frontiers, after they were opened (or replaced by a snapshot). */
  setFloors(f: { regular: OpId; intents: OpId }): void {
    this.regularFloor = f.regular;
    this.intentsFloor = f.intents;
  }

  async applyEntries(ents: readonly Entry[]): Promise<void> {
    this.deps.faults.failApply(ents);
    const g: Groups = { regular: [], intents: [] };
    const requests: Array<{ request: RequestTag; ht: HybridTime }> = [];
    for (const e of ents) {
      if (e.type !== 'normal' || e.data.byteLength === 0) continue;
      const op = decodeTabletOp(e.data);
      if (this.deps.isSplit()) {
        // Nothing is proposed after SPLIT (splitPending; a new leader applies SPLIT before it serves).
        this.deps.log.error({ tablet: this.deps.tabletId, index: e.index, type: op.type }, 'entry after SPLIT ignored');
        continue;
      }
      if (op.type === 'WRITE' || op.type === 'WRITE_INTENTS') for (const request of requestsOf(op)) requests.push({ request, ht: op.ht });
      await this.applyOne(op, { term: e.term, index: e.index }, g);
      this.deps.metrics.entriesApplied++;
    }
    // The two databases' writes overlap (each costs a thread-pool hand-off and an event-loop turn);
    // nothing of the regular group counts as applied (safe time, listeners, apply marks) before the
    // intents are in — as when they ran one after the other. Within a transaction the order is kept
    // anyway: both take its lock, intents first.
    const intentsDone = this.flushIntents(g.intents);
    try {
      await this.flushRegular(g.regular, intentsDone);
    } finally {
      await intentsDone;
    }
    // Remembered once written: a copy answered from here finds its rows in the databases.
    for (const r of requests) this.deps.retryable.replicated(r.request, r.ht);
    this.deps.mvcc.wakeWaiters();
  }

  private async applyOne(op: TabletOp, opId: OpId, g: Groups): Promise<void> {
    switch (op.type) {
      case 'WRITE':
      case 'TXN_STATUS':
        return this.collectRegular(op, opId, g.regular);
      case 'WRITE_INTENTS':
        return this.collectIntents(op, opId, g.intents);
      case 'APPLY_TXN':
        if (g.intents.some((i) => i.txn.txnId === op.txnId)) await this.flushIntents(g.intents);
        return this.collectApply(op, opId, g.regular);
      case 'APPLY_TXNS':
        // Each as its own APPLY_TXN would be, in order, all at this entry's op id.
        for (const t of op.txns) {
          if (g.intents.some((i) => i.txn.txnId === t.txnId)) await this.flushIntents(g.intents);
          this.collectApply({ type: 'APPLY_TXN', txnId: t.txnId, commitHt: t.commitHt }, opId, g.regular);
        }
        return;
      case 'REMOVE_TXN':
        await this.flushIntents(g.intents);
        await this.flushRegular(g.regular);
        return this.removeTxn(op, opId);
      case 'CHANGE_SCHEMA':
        return this.deps.changeSchema(op, opId);
      case 'ROW_LOCK':
        // Only in logs written while row locks were replicated (they are leader-only now).
        this.deps.mvcc.observe(op.ht);
        this.deps.rowLocks.apply(op, opId.index);
        return;
      case 'SPLIT':
        // The children are built from the data as of this entry: everything before it written,
        // every transaction apply before it finished (the same state on every replica).
        await this.flushIntents(g.intents);
        await this.flushRegular(g.regular);
        await this.deps.applier.settled();
        // The children's row lock epochs start above this tablet's (row-locks.ts noteSplit).
        this.deps.rowLocks.noteSplit(opId.term);
        return this.deps.split(op, opId.index);
    }
  }

  private collectRegular(op: Extract<TabletOp, { type: 'WRITE' | 'TXN_STATUS' }>, opId: OpId, group: RegularGroupItem[]): void {
    // Every replica's clock moves past the write, so a future leader assigns larger times.
    this.deps.mvcc.observe(op.ht);
    const needsWrite = opId.index > this.regularFloor.index; // else already in RegularDB (replay)
    if (op.type === 'WRITE') {
      group.push({ op, opId, write: needsWrite ? { ops: op.ops, ht: op.ht, opId } : undefined });
      return;
    }
    let write: RegularGroupItem['write'];
    if (needsWrite) {
      const rows: RowOp[] =
        op.status === RecordStatus.FORGOTTEN
          ? forgottenIds(op.txnId, op.payload).map((id) => ({ type: 'delete', key: recordKey(id) }))
          : [{ type: 'upsert', key: recordKey(op.txnId), columns: [{ columnId: RECORD_COLUMN_ID, value: Buffer.concat([Buffer.from([op.status.length]), Buffer.from(op.status, 'latin1'), Buffer.from(op.payload)]) }] }];
      write = { ops: rows, ht: op.ht, opId };
    }
    group.push({ op, opId, write });
  }

  private collectIntents(op: Extract<TabletOp, { type: 'WRITE_INTENTS' }>, opId: OpId, intents: IntentsGroupItem[]): void {
    this.deps.mvcc.observe(op.ht);
    if (opId.index <= this.intentsFloor.index) return; // already in IntentsDB (replay)
    this.deps.participant.intentsApplied(op.txn.txnId, op.txn.statusTablet);
    intents.push(op.reads ? { txn: op.txn, ops: op.ops, ht: op.ht, opId, reads: op.reads } : { txn: op.txn, ops: op.ops, ht: op.ht, opId });
  }

  private async flushIntents(intents: IntentsGroupItem[]): Promise<void> {
    if (intents.length === 0) return;
    if (this.deps.faults.corruptionTargeted()) this.deps.faults.corruptOneWrite(intents, 'provisional record (IntentsDB)');
    await this.deps.db().writeIntentsMany(intents.splice(0, intents.length));
  }

  /** APPLY_TXN: remember the outcome; the apply-pending mark joins the RegularDB group (flushRegular starts the apply). */
  private collectApply(op: Extract<TabletOp, { type: 'APPLY_TXN' }>, opId: OpId, group: RegularGroupItem[]): void {
    this.deps.clock.update(op.commitHt);
    if (this.deps.log.isLevelEnabled('debug')) this.deps.log.debug({ trace: 'txn', tablet: this.deps.tabletId, txn: op.txnId, commitHt: String(op.commitHt), index: opId.index, floor: [this.regularFloor.index, this.intentsFloor.index] }, 'apply txn entry');
    this.deps.participant.committed(op.txnId, op.commitHt);
    if (opId.index <= this.regularFloor.index && opId.index <= this.intentsFloor.index) return;
    if (this.deps.applier.inProgress(op.txnId)) return; // a duplicate APPLY entry while the first still runs
    if (group.some((g) => g.op.type === 'APPLY_TXN' && g.op.txnId === op.txnId)) return; // a duplicate in this batch
    group.push({ op, opId, write: undefined });
  }

  /** `before`: writes that must be done before anything of the group counts as applied (the batch's intents). */
  private async flushRegular(group: RegularGroupItem[], before?: Promise<void>): Promise<void> {
    if (group.length === 0) return;
    const items = group.splice(0, group.length);
    const writes = items.flatMap((i) => (i.write ? [i.write] : []));
    const applies = items.flatMap((i) => (i.op.type === 'APPLY_TXN' ? [{ txnId: i.op.txnId, commitHt: i.op.commitHt, opId: i.opId }] : []));
    let marks: ApplyMark[] = [];
    if (writes.length > 0 || applies.length > 0) {
      if (items.some((i) => i.op.type === 'WRITE' && i.write)) await this.deps.faults.sleepBeforeWriteBatch();
      // A small transaction is applied in this very batch (its versions and apply state), unless
      // its apply is to be delayed on this replica; any other gets an apply-pending mark here,
      // durable before any of its intents moves: a restart resumes the apply even if its entry is
      // not replayed.
      const applyNow = this.deps.faults.applyIntentsDelayMs() === 0;
      if (this.deps.faults.corruptionTargeted()) this.deps.faults.corruptOneWrite(items.flatMap((i) => (i.op.type === 'WRITE' && i.write ? [i.write] : [])), 'version (RegularDB)');
      marks = await this.deps.db().writeRegularMany(writes, applies, applyNow);
    }
    if (before) await before;
    for (const i of items) {
      if (i.op.type === 'WRITE') {
        if (i.write) this.deps.mvcc.markApplied(i.op.ht);
      } else if (i.op.type === 'TXN_STATUS') {
        // A COMMITTED record's entry time is its commit hybrid time.
        if (i.op.status === 'COMMITTED') this.deps.commitPoints.record(i.op.txnId, i.op.ht, this.deps.clock.wallMicros());
        this.deps.events()?.txnStatusApplied?.(i.op);
      }
    }
    let appliedNow = false;
    applies.forEach((a, k) => {
      if (marks[k] === 'pending') this.deps.applier.start(a);
      else if (marks[k] === 'applied') {
        appliedNow = true;
        this.deps.applier.noteApplied(a, this.deps.clock.wallMicros());
      }
    });
    // Their clean-ups (intent deletes, apply-state deletes) follow later, shared (as the worker's).
    if (appliedNow) this.deps.applier.appliedInBatch();
  }

  private async removeTxn(op: Extract<TabletOp, { type: 'REMOVE_TXN' }>, opId: OpId): Promise<void> {
    if (this.deps.log.isLevelEnabled('debug')) this.deps.log.debug({ trace: 'txn', tablet: this.deps.tabletId, txn: op.txnId, index: opId.index }, 'remove txn entry');
    this.deps.participant.removed(op.txnId);
    if (opId.index <= this.intentsFloor.index) return;
    await this.deps.db().removeIntents(op.txnId, opId);
    this.deps.participant.forget(op.txnId);
  }
}
