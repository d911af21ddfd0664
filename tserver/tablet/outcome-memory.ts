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
  /** In insertion order: the first entry is the oldest. */
  private readonly byTxn = new Map<TxnId, TxnStatusInfo & { atMs: number }>();

  constructor(
    private readonly limits: OutcomeLimits = OUTCOME_LIMITS,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  get size(): number {
    return this.byTxn.size;
  }

  get(txnId: TxnId): TxnStatusInfo | undefined {
    return this.byTxn.get(txnId);
  }

  remember(txnId: TxnId, o: TxnStatusInfo): void {
    const now = this.nowMs();
    this.byTxn.delete(txnId);
    this.byTxn.set(txnId, { ...o, atMs: now });
    const { max, hardMax, keepMs } = this.limits;
    while (this.byTxn.size > max) {
      const [oldest, v] = this.byTxn.entries().next().value!;
      if (this.byTxn.size <= hardMax && now - v.atMs < keepMs) break;
      this.byTxn.delete(oldest);
    }
  }
}
