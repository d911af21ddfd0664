/**
 * ForgottenCommits: a status tablet replica's bounded memory of the transactions it forgot that may
 * have committed, so that "no record" can be told apart from "committed and forgotten".
 *
 * A status tablet forgets a finished transaction (one FORGOTTEN entry) once every participant applied
 * or removed it, and a ready leader without a record answers ABORTED. For a reader resolving an
 * intent that is right either way (a forgotten transaction's intents are gone). For a client whose
 * commit answer was lost it is not: "no record" may mean the commit never happened (the record lived
 * on a paused leader only) or that it committed, applied and was forgotten meanwhile. This memory
 * makes the first answer definite for every transaction that started after its boundary:
 *
 * - every FORGOTTEN entry this replica applies after the memory (re)started is remembered, with the
 *   ids of its transactions that were not known ABORTED (conservative: an id without a record counts
 *   as possibly committed) and the commit times of those whose record said COMMITTED — so the other
 *   ambiguous case, a commit applied everywhere and forgotten before its client asked, is answered
 *   COMMITTED with its commit time;
 * - a transaction's forget comes after its commit, whose hybrid time exceeds its start; and the
 *   TXN_STATUS entries of a status tablet's log have increasing hybrid times (each leader takes
 *   `nextHt()` and proposes in one synchronous step, and serves only after applying every earlier
 *   entry, whose times its clock then passed). So a forget this replica did not capture — applied
 *   before the memory started (restart, remote bootstrap) or dropped by the bound — has a hybrid time
 *   below `boundaryHt`: the first TXN_STATUS entry captured, or the latest forget dropped;
 * - hence for a transaction with start time ≥ boundaryHt, "no record and not remembered" at a ready
 *   leader proves it never committed — and it never will: a ready leader has applied every committed
 *   entry, and a record the old leader held alone died with its term.
 *
 * Until the first TXN_STATUS entry after a (re)start is applied the boundary is unknown and nothing
 * is definite. Memory: about 100 bytes per remembered id; the bound (`max` ids) drops whole entries,
 * oldest first.
 */
import type { HybridTime } from '../../common/hybrid-time';
import type { TxnId } from '../../common/ids';

/** Ids a status tablet replica remembers by default (≈ 10 MB; minutes of history at this machine's commit rate). */
export const FORGOTTEN_COMMITS_MAX = 100_000;

export class ForgottenCommits {
  /** Remembered ids → their commit time when the record said COMMITTED (0n: no record was there). */
  private readonly ids = new Map<TxnId, HybridTime>();
  /** Remembered forgets in log order: their hybrid time and ids. */
  private readonly batches: Array<{ ht: HybridTime; ids: TxnId[] }> = [];
  private head = 0;
  /** Undefined until the first TXN_STATUS entry is captured after a (re)start. */
  private boundary: HybridTime | undefined;
  /** Times a start time below the boundary left an answer indefinite (metrics). */
  uncovered = 0;

  constructor(private readonly max = FORGOTTEN_COMMITS_MAX) {}

  /** The memory starts over (a restart, a remote bootstrap): only entries applied from now on count. */
  reset(): void {
    this.ids.clear();
    this.batches.length = 0;
    this.head = 0;
    this.boundary = undefined;
  }

  /** Every TXN_STATUS entry applied, in log order: the first one after a reset fixes the boundary. */
  observe(ht: HybridTime): void {
    if (this.boundary === undefined) this.boundary = ht;
  }

  /**
   * A FORGOTTEN entry at `ht` dropped the records of `txns` (those possibly committed), each with its
   * commit time when its record said COMMITTED (else 0n).
   */
  remember(ht: HybridTime, txns: ReadonlyArray<{ txnId: TxnId; commitHt: HybridTime }>): void {
    this.observe(ht);
    if (txns.length === 0) return;
    this.batches.push({ ht, ids: txns.map((t) => t.txnId) });
    for (const t of txns) this.ids.set(t.txnId, t.commitHt);
    while (this.ids.size > this.max && this.head < this.batches.length) {
      const b = this.batches[this.head]!;
      this.batches[this.head++] = undefined as unknown as { ht: HybridTime; ids: TxnId[] };
      for (const id of b.ids) this.ids.delete(id);
      if (this.boundary === undefined || b.ht > this.boundary) this.boundary = b.ht;
    }
    if (this.head > 1024 && this.head * 2 > this.batches.length) {
      this.batches.splice(0, this.head);
      this.head = 0;
    }
  }

  /**
   * True when a transaction started at `startHt` that this replica has no record of is proven never
   * to have committed: its forget would be remembered here.
   */
  neverCommitted(txnId: TxnId, startHt: HybridTime): boolean {
    if (this.boundary === undefined || startHt < this.boundary) {
      this.uncovered++;
      return false;
    }
    return !this.ids.has(txnId);
  }

  /** The commit time of a forgotten transaction whose record said COMMITTED, if this replica remembers it. */
  committedAt(txnId: TxnId): HybridTime | undefined {
    const ht = this.ids.get(txnId);
    return ht !== undefined && ht > 0n ? ht : undefined;
  }

  /** For the console and tests. */
  stats(): { remembered: number; boundaryHt: HybridTime | undefined; uncovered: number } {
    return { remembered: this.ids.size, boundaryHt: this.boundary, uncovered: this.uncovered };
  }
}
