/**
 * Serializes the operations on one transaction's records (intent writes, apply, remove): they
 * read-modify-write the metadata's next write id and the live intent counter, so two of them for the
 * same transaction must not interleave (e.g. a resumed apply and a replayed APPLY entry).
 */
import type { TxnId } from '../common/ids';

export class TxnLocks {
  private readonly tails = new Map<TxnId, Promise<void>>();

  async run<T>(txnId: TxnId, f: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(txnId) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.tails.set(txnId, tail);
    await prev;
    try {
      return await f();
    } finally {
      release();
      // Last one out removes the entry, so the map holds only transactions with work queued.
      if (this.tails.get(txnId) === tail) this.tails.delete(txnId);
    }
  }

  /** run() holding the locks of every id (taken one by one in sorted order: no deadlock with run()). */
  async runMany<T>(txnIds: readonly TxnId[], f: () => Promise<T>): Promise<T> {
    const ids = [...new Set(txnIds)].sort();
    const step = (i: number): Promise<T> => (i === ids.length ? f() : this.run(ids[i]!, () => step(i + 1)));
    return step(0);
  }
}
