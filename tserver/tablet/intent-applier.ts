/**
 * Moves committed transactions' intents into RegularDB OFF the ordered apply path (docs/architecture.md
 * §Apply path): later entries of this tablet, lease and ReadIndex reads on this replica do not wait
 * for it, and readers meanwhile resolve the intents through the participant's pending applies as
 * committed at commitHt. Applies queued together run together (DocDb.applyIntentsMany: two RocksDB
 * batches for the whole group); their clean-ups (intent deletes, apply-state deletes) are deferred
 * and written together (DocDb.flushDeferred).
 */
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import type { TxnId } from '../../common/ids';
import { APPLY_CLEANUP_DELAY_MS, type ApplyItem, type DocDbApi } from '../../docdb';
import type { ApplyLagLog } from './apply-lag-log';
import type { TxnParticipant } from './participant/txn-participant';

/** Committed transactions one replica applies together at most (DocDb.applyIntentsMany). */
const APPLY_GROUP_MAX = 256;

export interface IntentApplierDeps {
  flags: Flags;
  clock: HybridClock;
  db(): DocDbApi;
  /** The replica serves (a closed one leaves the persisted apply state for the next open). */
  running(): boolean;
  participant: TxnParticipant;
  /** Per transaction applied here: commit time → end of this replica's apply. */
  applyLag: ApplyLagLog;
  /** TEST_inject_sleep_before_applying_intents_ms on this replica. */
  delayMs(): number;
  /** A storage failure: fail-stop for this replica (CONVENTIONS). */
  failReplica(why: string): void;
}

export class IntentApplier {
  /** Applies of committed transactions under way on this replica (a resent APPLY waits for them). */
  private readonly applying = new Map<TxnId, Promise<void>>();
  /** Applies waiting for the apply worker, and the worker (one per replica) while it runs. */
  private queue: Array<ApplyItem & { resolve: () => void; reject: (e: unknown) => void }> = [];
  private worker: Promise<void> | undefined;
  /**
   * The worker runs: set when it starts and cleared in the same synchronous step in which it finds
   * the queue empty. (Cleared in a `.finally` of its promise, as it was, an apply queued between the
   * worker's return and that callback — an ordered batch's continuation in the same microtask drain,
   * likeliest on a replica catching up through many entries — found a worker set, started none, and
   * waited forever: the tablet simulator's unfinished applies.)
   */
  private workerActive = false;
  private deferredTimer: NodeJS.Timeout | undefined;
  private deferredFlush: Promise<void> | undefined;
  /** A flush was asked for while one ran (what was deferred meanwhile needs another). */
  private deferredFlushAgain = false;

  constructor(private readonly deps: IntentApplierDeps) {}

  /** The apply of `txnId` running on this replica, if any. */
  inProgress(txnId: TxnId): Promise<void> | undefined {
    return this.applying.get(txnId);
  }

  /** Until every apply started so far ended (a SPLIT builds its children from the data after them). */
  async settled(): Promise<void> {
    await Promise.all([...this.applying.values()].map((p) => p.catch(() => undefined)));
  }

  /** Until the applies queued so far ended (no new ones come once Raft stopped). */
  async drain(): Promise<void> {
    if (this.worker) await this.worker.catch(() => undefined);
  }

  /** A transaction's intents are applied on this replica: the lag log, and it no longer has intents here. */
  noteApplied(a: ApplyItem, markedMicros: number): void {
    this.deps.applyLag.record(a.txnId, a.commitHt, this.deps.clock.wallMicros(), markedMicros);
    this.deps.participant.forget(a.txnId);
  }

  /** Applied in the ordered batch itself (small, undelayed): its clean-ups follow later, shared (as the worker's). */
  appliedInBatch(): void {
    if (!this.flushDeferredIfDue() && !this.workerActive) this.scheduleDeferredFlush();
  }

  /** Move `a`'s intents off the ordered apply path (its apply-pending mark is durable). */
  start(a: ApplyItem): void {
    const { participant } = this.deps;
    participant.applyStarted(a.txnId, a.commitHt);
    const markedMicros = this.deps.clock.wallMicros();
    // The lab's defining knob: only this replica's apply of this transaction waits.
    const sleepMs = this.deps.delayMs();
    const run = (async (): Promise<void> => {
      if (sleepMs > 0) await new Promise((r) => setTimeout(r, sleepMs));
      if (!this.deps.running()) return; // closed: the persisted apply state resumes at open
      await this.enqueue(a);
      this.noteApplied(a, markedMicros);
    })();
    this.applying.set(a.txnId, run);
    run
      .catch((e: unknown) => {
        // A storage failure is fail-stop for this replica (CONVENTIONS): stop serving it.
        this.deps.failReplica(`apply of ${a.txnId} failed: ${e instanceof Error ? e.message : String(e)}`);
      })
      .finally(() => {
        participant.applyEnded(a.txnId);
        if (this.applying.get(a.txnId) === run) this.applying.delete(a.txnId);
      });
  }

  private enqueue(a: ApplyItem): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ txnId: a.txnId, commitHt: a.commitHt, opId: a.opId, resolve, reject }); // not { ...a, resolve, reject }: see update-batcher.ts
      if (this.workerActive) return;
      this.workerActive = true;
      this.worker = this.runWorker();
    });
  }

  private async runWorker(): Promise<void> {
    try {
      for (;;) {
        // An empty queue ends the worker in this very step (the finally clears workerActive).
        if (this.queue.length === 0) {
          // Nothing follows: the deferred clean-ups (intent deletes, apply-state deletes) ride along
          // with this replica's next writes, or get written after apply_cleanup_delay_ms.
          this.scheduleDeferredFlush();
          return;
        }
        const items = this.queue.splice(0, APPLY_GROUP_MAX);
        try {
          if (this.deps.running()) await this.deps.db().applyIntentsMany(items);
          for (const i of items) i.resolve();
        } catch (e) {
          for (const i of items) i.reject(e);
        }
        // Under steady load the worker never runs out of work: clean-ups that waited long enough are
        // written beside the next applies.
        this.flushDeferredIfDue();
      }
    } finally {
      this.workerActive = false;
    }
  }

  /**
   * Write the deferred clean-ups of the applies (DocDb.flushDeferred: the intent deletes after one
   * RegularDB sync, then the apply-state deletes) apply_cleanup_delay_ms after the oldest of them,
   * unless later writes carried them. Nothing depends on their timing (a restart resumes an apply
   * whose intents are still there: the same versions again); written at once, they cost a sync and
   * RocksDB batches per apply when transactions come one at a time.
   */
  private scheduleDeferredFlush(): void {
    if (this.deferredTimer) return;
    const waitMs = Math.max(0, this.deps.flags.get(APPLY_CLEANUP_DELAY_MS) - this.deps.db().deferredAgeMs());
    this.deferredTimer = setTimeout(() => {
      this.deferredTimer = undefined;
      this.startDeferredFlush();
    }, waitMs);
    this.deferredTimer.unref();
  }

  /** Start writing the deferred clean-ups when the oldest waited apply_cleanup_delay_ms; true if due. */
  private flushDeferredIfDue(): boolean {
    if (this.deps.db().deferredAgeMs() < this.deps.flags.get(APPLY_CLEANUP_DELAY_MS)) return false;
    this.startDeferredFlush();
    return true;
  }

  private startDeferredFlush(): void {
    if (!this.deps.running()) return;
    if (this.deferredFlush) {
      this.deferredFlushAgain = true;
      return;
    }
    this.deferredFlush = this.deps
      .db()
      .flushDeferred()
      .catch((e: unknown) => {
        // A storage failure is fail-stop for this replica (CONVENTIONS), as in the apply itself.
        if (!this.deps.running()) return;
        this.deps.failReplica(`writing the clean-ups of applied transactions failed: ${e instanceof Error ? e.message : String(e)}`);
      })
      .finally(() => {
        this.deferredFlush = undefined;
        if (this.deferredFlushAgain) {
          this.deferredFlushAgain = false;
          this.startDeferredFlush();
        }
      });
  }

  /** Before the databases close: no timer left, no deferred flush running. */
  async cancelDeferredFlush(): Promise<void> {
    if (this.deferredTimer) clearTimeout(this.deferredTimer);
    this.deferredTimer = undefined;
    this.deferredFlushAgain = false;
    while (this.deferredFlush) await this.deferredFlush;
  }
}
