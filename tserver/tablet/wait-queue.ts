/**
 * A tablet leader's wait queue (YugabyteDB's wait-on-conflict, `enable_wait_queues`): operations
 * blocked by pending transactions wait here — holding no lock — until this replica applies or removes
 * one of their blockers (APPLY_TXN, REMOVE_TXN), or a poll interval passes; then they run their
 * conflict resolution again from the start.
 */
import type { TxnId } from '../../common/ids';

/** Waiters at most per tablet; more fail at once (the caller answers TXN_CONFLICT). */
export const WAITERS_MAX = 10_000;

export class WaitQueue {
  private readonly byBlocker = new Map<TxnId, Set<() => void>>();
  private waiting = 0;
  /** Waits begun since the replica opened (console, tests). */
  waits = 0;

  /** Wait until one of `blockers` finishes here or `ms` pass; false when the queue is full (no wait). */
  async wait(blockers: readonly TxnId[], ms: number): Promise<boolean> {
    if (this.waiting >= WAITERS_MAX) return false;
    this.waiting++;
    this.waits++;
    let timer: NodeJS.Timeout | undefined;
    let wake: (() => void) | undefined;
    try {
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, Math.max(1, ms));
        for (const b of blockers) {
          let s = this.byBlocker.get(b);
          if (!s) this.byBlocker.set(b, (s = new Set()));
          s.add(resolve);
        }
      });
    } finally {
      clearTimeout(timer);
      this.waiting--;
      for (const b of blockers) {
        const s = this.byBlocker.get(b);
        if (!s || !wake) continue;
        s.delete(wake);
        if (s.size === 0) this.byBlocker.delete(b);
      }
    }
    return true;
  }

  /** `txnId` finished on this tablet (applied or removed): wake whoever waits for it. */
  wake(txnId: TxnId): void {
    const s = this.byBlocker.get(txnId);
    if (!s) return;
    this.byBlocker.delete(txnId);
    for (const w of s) w();
  }

  /** Operations waiting now. */
  size(): number {
    return this.waiting;
  }
}
