/**
 * The apply stage of one RaftGroup (raft-group.ts, processing contract point 3): a strictly ordered
 * worker that hands committed entries to the state machine one batch at a time, while Raft
 * replication of later entries goes on. A batch never spans a conf change, so the change takes
 * effect in the core exactly at its position in the stream.
 */
import { APPLY_BATCH_ENTRIES_MAX } from './raft-group-types';
import type { Entry } from './types';
import { traceStage } from '../common/stage-trace';

export interface ApplyStageDeps {
  /** For the stage trace (common/stage-trace.ts). */
  groupId?: string;
  /** The state machine (RaftGroupDeps.applyEntries); the next batch waits for this one. */
  applyEntries(entries: readonly Entry[]): Promise<void>;
  /** What the state machine holds: queued entries at or below it are skipped. */
  appliedIndex(): number;
  /**
   * A conf change ends the next batch: put it in force in the core before the batch applies. The
   * batch (and every later one) waits for its promise: the change must be durable in the log before
   * anything the state machine writes after it can be.
   */
  applyConfChange(e: Entry): Promise<void>;
  /** These entries are committed and queued; `behind`: they wait for an apply already running or queued. */
  committed?(entries: readonly Entry[], behind: boolean): void;
  /** This batch (fresh entries, in order) is applied. */
  applied(batch: readonly Entry[]): void;
  stopped(): boolean;
  /** An apply failure: fail-stop. */
  fail(e: unknown): void;
}

export interface ApplyCounts {
  batches: number;
  entries: number;
  waitMs: number;
  runMs: number;
}

export class ApplyStage {
  private readonly queue: Entry[] = [];
  /** When each queued entry was handed to the apply stage (performance.now(), ms), in step with it. */
  private readonly queueAt: number[] = [];
  /** Since the group started: see RaftGroup.applyCounts(). */
  private readonly counts: ApplyCounts = { batches: 0, entries: 0, waitMs: 0, runMs: 0 };
  private applying: Promise<void> | undefined;
  private drainWaiters: Array<() => void> = [];

  constructor(private readonly deps: ApplyStageDeps) {}

  /** Committed entries queued, not yet applying. */
  length(): number {
    return this.queue.length;
  }

  /** The live counters, read-only. */
  applyCounts(): Readonly<ApplyCounts> {
    return this.counts;
  }

  /** Queue committed entries handed out at `atMs` (performance.now()) and start applying. */
  enqueue(entries: readonly Entry[], atMs: number): void {
    if (entries.length === 0) return;
    traceStage('commit', this.deps.groupId ?? '-', entries[entries.length - 1]!.index);
    const behind = this.applying !== undefined || this.queue.length > 0;
    for (const e of entries) {
      this.queue.push(e);
      this.queueAt.push(atMs);
    }
    this.deps.committed?.(entries, behind);
    this.start();
  }

  /** Resolves when the batch applying now (if any) has finished. */
  idle(): Promise<void> | undefined {
    return this.applying;
  }

  private start(): void {
    if (this.applying || this.deps.stopped()) return;
    this.applying = this.loop()
      .catch((e: unknown) => this.deps.fail(e))
      .finally(() => {
        this.applying = undefined;
        if (this.queue.length > 0 && !this.deps.stopped()) this.start();
        else this.notifyDrain();
      });
  }

  private async loop(): Promise<void> {
    while (this.queue.length > 0 && !this.deps.stopped()) {
      // A batch never spans a conf change: it takes effect in the core exactly at its position.
      let n = 0;
      while (n < this.queue.length && n < APPLY_BATCH_ENTRIES_MAX) {
        const e = this.queue[n]!;
        n++;
        if (e.type === 'confChange') break;
      }
      const batch = this.queue.splice(0, n);
      const handedOutAt = this.queueAt.splice(0, n);
      const skipBelow = this.deps.appliedIndex();
      const fresh = batch[0]!.index <= skipBelow ? batch.filter((e) => e.index > skipBelow) : batch;
      if (fresh.length === 0) continue;
      const last = fresh[fresh.length - 1]!;
      if (last.type === 'confChange') await this.deps.applyConfChange(last);
      const start = performance.now();
      traceStage('apply.start', this.deps.groupId ?? '-', last.index);
      await this.deps.applyEntries(fresh);
      traceStage('apply.end', this.deps.groupId ?? '-', last.index);
      const st = this.counts;
      st.batches++;
      st.entries += fresh.length;
      st.runMs += performance.now() - start;
      for (let i = 0; i < batch.length; i++) if (batch[i]!.index > skipBelow) st.waitMs += start - handedOutAt[i]!;
      if (this.deps.stopped()) return;
      this.deps.applied(fresh);
      this.notifyDrain();
    }
  }

  /**
   * Resolves once fewer than `n` entries are queued (n = 1: and none is applying), or the group
   * stopped: backpressure on the processing pass, and a snapshot install's wait for the queue.
   */
  waitBelow(n: number): Promise<void> {
    const done = (): boolean => this.queue.length < n && (n > 1 || !this.applying);
    if (done()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.deps.stopped() || done()) resolve();
        else this.drainWaiters.push(check);
      };
      this.drainWaiters.push(check);
    });
  }

  /** Let waitBelow's callers look again (the group also calls it when it stops). */
  notifyDrain(): void {
    const ws = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of ws) w();
  }
}
