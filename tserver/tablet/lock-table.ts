/**
 * In-memory per-key exclusive locks on a tablet leader. INSERT/UPDATE check whether a row exists and
 * then propose; holding the row's lock from the check until the write is applied makes that
 * check-then-write atomic against other writers of the same row on this leader. (A new leader starts
 * with an empty table: every earlier write is applied before it serves, see RaftGroup readiness.)
 *
 * Keys are acquired in sorted order, so two multi-row writes can never deadlock.
 */
import { DbError, ErrorCode } from '../../common/errors';

/** Requests waiting for locks in one tablet before new ones get BACKPRESSURE. */
export const LOCK_WAITERS_MAX = 10_000;

export type Release = () => void;

export class LockTable {
  /** key → queue of waiters; the head holds the lock. */
  private readonly queues = new Map<string, Array<() => void>>();
  private waiters = 0;

  async acquire(keys: readonly string[]): Promise<Release> {
    const sorted = [...new Set(keys)].sort();
    if (this.waiters >= LOCK_WAITERS_MAX) throw new DbError(ErrorCode.BACKPRESSURE, `${this.waiters} writes waiting for row locks`);
    this.waiters++;
    const held: string[] = [];
    try {
      for (const k of sorted) {
        await this.lockOne(k);
        held.push(k);
      }
    } finally {
      this.waiters--;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const k of held) this.unlockOne(k);
    };
  }

  size(): number {
    return this.queues.size;
  }

  private lockOne(k: string): Promise<void> {
    const q = this.queues.get(k);
    if (!q) {
      this.queues.set(k, [() => undefined]);
      return Promise.resolve();
    }
    return new Promise((resolve) => q.push(resolve));
  }

  private unlockOne(k: string): void {
    const q = this.queues.get(k);
    if (!q) return;
    q.shift();
    const next = q[0];
    if (next) next();
    else this.queues.delete(k);
  }
}
