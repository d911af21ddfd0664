/**
 * The participant leader's writes (docs/architecture.md §Participant side): a transaction's write
 * becomes one WRITE_INTENTS entry after row locks and conflict resolution against other
 * transactions' intents; a serializable read takes read locks the same way. Under
 * enable_wait_queues a blocked operation waits in the tablet's wait queue (wait-on-conflict).
 */
import { DbError, ErrorCode } from '../../../common/errors';
import type { Flags } from '../../../common/flags';
import type { HybridClock } from '../../../common/hybrid-clock';
import type { HybridTime } from '../../../common/hybrid-time';
import type { Logger } from '../../../common/log';
import { Isolation, type DocDbApi, type ReadLocks, type TxnMeta } from '../../../docdb';
import { WRITE_TIMEOUT_MS } from '../../tserver-flags';
import type { LockTable } from '../lock-table';
import type { MvccClock } from '../mvcc-clock';
import type { RowLockTable } from '../row-locks';
import { docKeyString, type RequestTag, type TabletOp } from '../tablet-op';
import { releaseWhenSettled, type ProposalTracker, type ProposeOp, type TxnWriteRequest } from '../tablet-types';
import { BlockedBy, resolveConflicts, resolveSerializableConflicts } from './conflict-resolution';
import { ENABLE_WAIT_QUEUES, WAIT_QUEUE_POLL_INTERVAL_MS } from './participant-flags';
import type { TxnParticipant } from './txn-participant';

/** A wait-on-conflict stops this long before the caller's deadline (the Raft round still has to run). */
const WAIT_MARGIN_MS = 100;
/** A wait-on-conflict longer than this is logged once (with its blockers). */
const LONG_WAIT_MS = 1000;

export interface IntentWritesDeps {
  tabletId: string;
  flags: Flags;
  clock: HybridClock;
  log: Logger;
  db(): DocDbApi;
  participant: TxnParticipant;
  mvcc: MvccClock;
  /** The leader's row locks (shared with plain writes: each checks what the other wrote). */
  locks: LockTable;
  rowLocks: RowLockTable;
  checkServing(): void;
  /** Runs a retryable request once, whatever copies arrive (WritePath.deduped). */
  deduped(request: RequestTag | undefined, run: (track: ProposalTracker) => Promise<HybridTime>): Promise<HybridTime>;
  proposeOp: ProposeOp;
  metrics: { writeOps: number; rowsWritten: number; readLocks: number };
}

export class IntentWrites {
  /** WRITE_INTENTS this leader proposed and has not applied yet. */
  private inFlight = 0;
  private newTxnHoldUntilMs = 0;

  constructor(private readonly deps: IntentWritesDeps) {}

  /** WRITE_INTENTS proposed here and not applied yet (a split waits for none). */
  inFlightCount(): number {
    return this.inFlight;
  }

  /** Until performance.now() reaches `untilMs`, writes of transactions without intents here get TRY_AGAIN (a split drains). */
  holdNewTransactions(untilMs: number): void {
    this.newTxnHoldUntilMs = untilMs;
  }

  /**
   * Transactional write (participant leader): row locks → conflict resolution against other
   * transactions' intents and newer committed versions → one WRITE_INTENTS entry; acknowledged after
   * Raft commit and local apply (every replica then holds the intents in its IntentsDB).
   *
   * Serializable: no snapshot to compare with — the write takes {SW} intents (and a read lock on each
   * row an INSERT/UPDATE checks), orders after committed conflicting transactions, and checks
   * existence at the current time (see serializableReadTime).
   */
  async writeIntents(req: TxnWriteRequest): Promise<HybridTime> {
    // A split waiting for intents to drain: transactions already here may finish, new ones wait.
    if (performance.now() < this.newTxnHoldUntilMs && !this.deps.participant.hasIntents(req.txn.txnId)) {
      throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${this.deps.tabletId} is about to split: new transactions wait`);
    }
    return this.deps.deduped(req.request, (track) => this.waitingOnConflict(req.deadlineMonoMs, (wait) => this.writeIntentsOnce(req, wait, track), req.coalesced === true));
  }

  /**
   * Run `attempt` (row locks → conflict resolution → Raft entry). Under enable_wait_queues a pending
   * transaction that outranks this one blocks it (BlockedBy): it waits in the wait queue with no lock
   * held — woken when this tablet applies or removes a blocker, or after wait_queue_poll_interval_ms —
   * and tries again from the start; near the caller's deadline it stops waiting and fails with
   * TXN_CONFLICT (nothing written), as fail-on-conflict would have at once.
   */
  private async waitingOnConflict<T>(deadlineMonoMs: number | undefined, attempt: (wait: boolean) => Promise<T>, coalesced = false): Promise<T> {
    const { flags, tabletId } = this.deps;
    const start = performance.now();
    const end = deadlineMonoMs ?? start + flags.get(WRITE_TIMEOUT_MS);
    let warned = false;
    for (;;) {
      const wait = flags.get(ENABLE_WAIT_QUEUES);
      try {
        return await attempt(wait);
      } catch (e) {
        if (!(e instanceof BlockedBy)) throw e;
        if (coalesced) throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${tabletId}: blocked by pending transaction(s) ${e.blockers.join(', ')}; send this write alone to wait for them`, { otherTxnId: e.blockers[0] });
        if (!warned && performance.now() - start > LONG_WAIT_MS) {
          warned = true;
          this.deps.log.info({ tablet: tabletId, blockers: e.blockers, waitedMs: Math.round(performance.now() - start) }, 'waiting long for pending transactions');
        }
        const left = end - performance.now() - WAIT_MARGIN_MS;
        const waited = left > 0 && (await this.deps.participant.waitQueue.wait(e.blockers, Math.min(left, flags.get(WAIT_QUEUE_POLL_INTERVAL_MS))));
        if (!waited) throw new DbError(ErrorCode.TXN_CONFLICT, `tablet ${tabletId}: waited for pending transaction(s) ${e.blockers.join(', ')} until the request's deadline`, { otherTxnId: e.blockers[0] });
      }
    }
  }

  private async writeIntentsOnce(req: TxnWriteRequest, wait: boolean, track?: ProposalTracker): Promise<HybridTime> {
    const { clock, participant } = this.deps;
    this.deps.checkServing();
    participant.checkNotRemoved(req.txn.txnId);
    if (req.propagatedHt) clock.update(req.propagatedHt);
    const release = await this.deps.locks.acquire(req.ops.map((o) => docKeyString(o.op.key)));
    // As in a plain write: intents whose entry timed out keep their rows locked until it settles, or
    // the next writer's conflict check would miss them.
    let unsettled: Promise<unknown> | undefined;
    try {
      const ops = req.ops.map((o) => o.op);
      this.deps.rowLocks.check(this.deps.tabletId, ops.map((o) => o.key), undefined, clock.now());
      const serializable = req.txn.isolation === Isolation.SERIALIZABLE;
      const checked = req.ops.filter((o) => o.kind === 'INSERT' || o.kind === 'UPDATE').map((o) => o.op.key);
      const reads: ReadLocks | undefined = serializable && checked.length > 0 ? { rows: checked, tablet: false } : undefined;
      const conflicts = await this.resolve(req, reads, wait);
      await this.checkExistence(req, serializable ? clock.now() : req.readHt);
      const ht = this.deps.mvcc.nextHt();
      if (this.deps.log.isLevelEnabled('debug')) this.deps.log.debug({ trace: 'txn', tablet: this.deps.tabletId, txn: req.txn.txnId, readHt: String(req.readHt), ht: String(ht), keys: ops.map((o) => docKeyString(o.key)), conflicts }, 'write intents');
      const op: TabletOp = reads ? { type: 'WRITE_INTENTS', txn: req.txn, ht, ops, reads } : { type: 'WRITE_INTENTS', txn: req.txn, ht, ops };
      if (req.request) op.request = req.request;
      this.inFlight++;
      try {
        await this.deps.proposeOp(op, req.deadlineMs, (p) => {
          unsettled = p;
          track?.(p, ht);
        });
        unsettled = undefined;
      } finally {
        this.inFlight--;
      }
      this.deps.metrics.writeOps++;
      this.deps.metrics.rowsWritten += req.ops.length;
      return ht;
    } finally {
      releaseWhenSettled(release, unsettled);
    }
  }

  /** Conflict resolution of a transactional write (under its row locks); answers the conflicts met, for the trace. */
  private async resolve(req: TxnWriteRequest, reads: ReadLocks | undefined, wait: boolean): Promise<string[]> {
    const { clock } = this.deps;
    const serializable = req.txn.isolation === Isolation.SERIALIZABLE;
    const conflicts = await this.deps.db().findConflicts(req.txn, req.ops.map((o) => o.op), serializable ? clock.now() : req.readHt, reads);
    if (conflicts.length > 0) {
      const cd = this.deps.participant.conflictDeps();
      if (!cd) throw new DbError(ErrorCode.TXN_CONFLICT, `tablet ${this.deps.tabletId}: conflicting transaction`);
      if (serializable) {
        const after = await resolveSerializableConflicts(req.txn, clock.now(), conflicts, cd, wait);
        if (after > 0n) clock.update(after);
      } else await resolveConflicts(req.txn, req.readHt, conflicts, cd, wait);
    }
    return conflicts.map((c) => (c.type === 'intent' ? `intent:${c.txnId}` : `committed:${c.commitHt}`));
  }

  /** INSERT: the row must not exist; UPDATE: it must (as the transaction sees it at `existsAt`). */
  private async checkExistence(req: TxnWriteRequest, existsAt: HybridTime): Promise<void> {
    for (const o of req.ops) {
      if (o.kind !== 'INSERT' && o.kind !== 'UPDATE') continue;
      const row = await this.deps.db().getRow(o.op.key, { readHt: existsAt, txnId: req.txn.txnId, resolveStatus: this.deps.participant.statusResolver() });
      if (o.kind === 'INSERT' && row) throw new DbError(ErrorCode.ALREADY_EXISTS, `tablet ${this.deps.tabletId}: row already exists`);
      if (o.kind === 'UPDATE' && !row) throw new DbError(ErrorCode.NOT_FOUND, `tablet ${this.deps.tabletId}: row does not exist`);
    }
  }

  /**
   * The read time of a serializable transaction's read (YugabyteDB's serializable isolation): take
   * read locks — a strong read intent on each row read, or for a scan on the whole tablet (the
   * tablet gate held exclusively meanwhile, so no write's conflict check races it) — resolving
   * conflicts with other transactions' write intents (higher priority wins; committed ones are
   * ordered before), replicate them in a WRITE_INTENTS entry, and read at that entry's hybrid time.
   * From then until the transaction ends no other transaction can write what was read, so every
   * read of the transaction sees what its commit time would: two-phase locking, with no snapshot
   * and no read restarts. Locks the transaction already holds here are not taken again: the read
   * runs at the current time.
   */
  serializableReadTime(txn: TxnMeta, reads: ReadLocks, propagated: HybridTime | undefined, deadlineMonoMs: number | undefined): Promise<HybridTime> {
    return this.waitingOnConflict(deadlineMonoMs, (wait) => this.serializableReadTimeOnce(txn, reads, propagated, wait));
  }

  private async serializableReadTimeOnce(txn: TxnMeta, reads: ReadLocks, propagated: HybridTime | undefined, wait: boolean): Promise<HybridTime> {
    const { clock } = this.deps;
    this.deps.checkServing();
    this.deps.participant.checkNotRemoved(txn.txnId);
    if (propagated) clock.update(propagated);
    // A scan's lock (tablet or hash key) covers rows no write has locked yet: it takes the tablet
    // gate exclusively while it checks and replicates, so no write's conflict check races it.
    const scan = reads.tablet || (reads.hashKeys?.length ?? 0) > 0;
    const release = await this.deps.locks.acquire(reads.rows.map((k) => docKeyString(k)), scan ? 'exclusive' : 'shared');
    try {
      const db = this.deps.db();
      if (db.holdsReadLocks(txn.txnId, reads)) return clock.now();
      const conflicts = await db.findConflicts(txn, [], clock.now(), reads);
      if (conflicts.length > 0) {
        const cd = this.deps.participant.conflictDeps();
        if (!cd) throw new DbError(ErrorCode.TXN_CONFLICT, `tablet ${this.deps.tabletId}: conflicting transaction`);
        const after = await resolveSerializableConflicts(txn, clock.now(), conflicts, cd, wait);
        if (after > 0n) clock.update(after);
      }
      const ht = this.deps.mvcc.nextHt();
      await this.deps.proposeOp({ type: 'WRITE_INTENTS', txn, ht, ops: [], reads });
      this.deps.metrics.readLocks++;
      return ht;
    } finally {
      release();
    }
  }
}
