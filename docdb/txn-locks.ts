/**
 * Serializes the operations on one transaction's records (intent writes, apply, remove): they
 * read-modify-write the metadata's next write id and the live intent counter, so two of them for the
 * same transaction must not interleave (e.g. a resumed apply and a replayed APPLY entry).
 *
 * Each transaction id has a FIFO queue (the promise its last holder resolves on leaving). A caller
 * joins the queues of ALL its ids in one synchronous step, then waits for the callers ahead of it in
 * any of them. No deadlock: a caller only ever waits for callers that joined before it, so the
 * waits follow joining order and cannot form a cycle. (Taking the ids one by one, as nested run()s,
 * cost an async frame and three promises per id — a Raft batch applies dozens of transactions.)
 */
import type { TxnId } from '../common/ids';

export class TxnLocks {
  private readonly tails = new Map<TxnId, Promise<void>>();

  run<T>(txnId: TxnId, f: () => Promise<T>): Promise<T> {
    return this.runMany([txnId], f);
  }

  /** `f` while holding the locks of every id in `txnIds` (duplicates allowed). */
  async runMany<T>(txnIds: readonly TxnId[], f: () => Promise<T>): Promise<T> {
    const ids = txnIds.length === 1 ? txnIds : [...new Set(txnIds)];
    let ahead: Promise<unknown> | undefined;
    let aheadMany: Array<Promise<void>> | undefined;
    for (const id of ids) {
      const p = this.tails.get(id);
      if (p === undefined) continue;
      if (ahead === undefined) ahead = p;
      else (aheadMany ??= [ahead as Promise<void>]).push(p);
    }
    if (aheadMany !== undefined) ahead = Promise.all(aheadMany);
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    // What the next caller of any of these ids waits for: everyone ahead of us, then us.
    const tail = ahead === undefined ? mine : ahead.then(() => mine);
    for (const id of ids) this.tails.set(id, tail);
    try {
      // Always one await, even uncontended: f starts after the caller's synchronous code, as it
      // did when every id was taken by its own run().
      await ahead;
      return await f();
    } finally {
      release();
      // Last one out removes the entry, so the map holds only transactions with work queued.
      for (const id of ids) if (this.tails.get(id) === tail) this.tails.delete(id);
    }
  }

  /** Transaction ids with a holder or a waiter (tests). */
  get size(): number {
    return this.tails.size;
  }
}
