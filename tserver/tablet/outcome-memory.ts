/**
 * The outcomes (APPLY_TXN: committed at a time, REMOVE_TXN: aborted) one replica remembers for status
 * resolution: a status tablet forgets a committed transaction once every participant leader applied
 * it and then answers ABORTED for it, so a reader that met the intents just before they were applied
 * must find the truth here (TabletPeer.settleRemote).
 *
 * Bounded: beyond `max` entries the oldest is evicted only once it is `keepMs` old (a reader that met
 * the intents before the apply may still be asking), and always beyond `hardMax`. Remembering a
 * transaction again makes it the newest.
 */
import type { TxnId } from '../../common/ids';
import type { TxnStatusInfo } from '../transaction/txn-env';

export interface OutcomeLimits {
  max: number;
  hardMax: number;
  keepMs: number;
}

export const OUTCOME_LIMITS: OutcomeLimits = { max: 10_000, hardMax: 200_000, keepMs: 60_000 };

export class OutcomeMemory {
  private readonly byTxn = new Map<TxnId, { info: TxnStatusInfo; atMs: number; seq: number }>();
  /**
   * Every remember() in order (oldest first, from `head`), with its sequence number: the entry is the
   * live one only while byTxn still holds that number for the id (remembering again supersedes it).
   * The oldest live outcome is found here, not by iterating byTxn from its start: V8's Map keeps the
   * slots of deleted entries until it rehashes, so after many evictions from the front such an
   * iteration walks every dead slot first — tens of microseconds per call at 10,000 outcomes.
   */
  private queueIds: TxnId[] = [];
  private queueSeqs: number[] = [];
  private head = 0;
  private seq = 0;

  constructor(
    private readonly limits: OutcomeLimits = OUTCOME_LIMITS,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  get size(): number {
    return this.byTxn.size;
  }

  get(txnId: TxnId): TxnStatusInfo | undefined {
    return this.byTxn.get(txnId)?.info;
  }

  remember(txnId: TxnId, o: TxnStatusInfo): void {
    const now = this.nowMs();
    const seq = ++this.seq;
    // A wrapper, not `{ ...o, atMs, seq }`: in Node 20's V8 a spread followed by new properties costs
    // over a microsecond (measured), a plain literal a few nanoseconds.
    this.byTxn.set(txnId, { info: o, atMs: now, seq });
    this.queueIds.push(txnId);
    this.queueSeqs.push(seq);
    const { max, hardMax, keepMs } = this.limits;
    while (this.byTxn.size > max && this.head < this.queueIds.length) {
      const id = this.queueIds[this.head]!;
      const v = this.byTxn.get(id);
      if (v !== undefined && v.seq === this.queueSeqs[this.head]) {
        if (this.byTxn.size <= hardMax && now - v.atMs < keepMs) break;
        this.byTxn.delete(id);
      }
      this.head++;
    }
    this.compactQueue();
  }

  /** Drop the queue's consumed and superseded slots once they outnumber the live ones. */
  private compactQueue(): void {
    const len = this.queueIds.length;
    if (len - this.byTxn.size < Math.max(1024, this.byTxn.size)) return;
    const ids: TxnId[] = [];
    const seqs: number[] = [];
    for (let i = this.head; i < len; i++) {
      const id = this.queueIds[i]!;
      if (this.byTxn.get(id)?.seq === this.queueSeqs[i]) {
        ids.push(id);
        seqs.push(this.queueSeqs[i]!);
      }
    }
    this.queueIds = ids;
    this.queueSeqs = seqs;
    this.head = 0;
  }
}
