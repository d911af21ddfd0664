/**
 * The coordinator's FORGOTTEN entries, batched (coordinator.ts): a transaction applied or removed
 * everywhere is forgotten together with every other one finished meanwhile — one Raft entry (one
 * RegularDB batch of tombstones per replica) for all of them instead of one each. A batch holds each
 * transaction's lock, like every other status change.
 */
import type { Flags } from '../../common/flags';
import type { TxnId } from '../../common/ids';
import { TRANSACTION_FORGET_DELAY_MS } from './txn-flags';

/** Finished transactions forgotten by one FORGOTTEN entry at most (ids ≤ 129 bytes each in its payload). */
export const FORGET_BATCH_MAX = 1_000;

export interface ForgetBatcherDeps {
  flags: Flags;
  isStopped(): boolean;
  /** Run `f` holding the transaction's lock (the coordinator's per-transaction order). */
  withTxnLock<T>(id: TxnId, f: () => Promise<T>): Promise<T>;
  /** Replicate one FORGOTTEN entry naming `ids` (at least one). */
  proposeForget(ids: TxnId[]): Promise<void>;
}

export class ForgetBatcher {
  /** Finished transactions waiting to be forgotten; `running`: a batch is being replicated (at most one). */
  private queue: Array<{ txnId: TxnId; resolve: () => void; reject: (e: unknown) => void }> = [];
  private running = false;

  constructor(private readonly d: ForgetBatcherDeps) {}

  /** Resolves once a FORGOTTEN entry naming `txnId` is replicated. */
  forget(txnId: TxnId): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ txnId, resolve, reject });
      if (!this.running) void this.loop();
    });
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        // Collect for a while first: at low load each transaction would otherwise cost a Raft round
        // of its own (frames, an fsync and a RegularDB batch on every replica) just to be forgotten.
        const delayMs = this.d.flags.get(TRANSACTION_FORGET_DELAY_MS);
        if (delayMs > 0 && this.queue.length < FORGET_BATCH_MAX && !this.d.isStopped()) await new Promise((r) => setTimeout(r, delayMs).unref());
        const batch = this.queue.splice(0, FORGET_BATCH_MAX);
        const ids = [...new Set(batch.map((b) => b.txnId))];
        const run = (i: number): Promise<void> => (i < ids.length ? this.d.withTxnLock(ids[i]!, () => run(i + 1)) : this.d.proposeForget(ids));
        try {
          await run(0);
          for (const b of batch) b.resolve();
        } catch (e) {
          for (const b of batch) b.reject(e);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
