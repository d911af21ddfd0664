/**
 * A participant leader's APPLY entries, coalesced per tablet (issue 62, docs/transactions.md "What
 * a transaction costs"): the status tablets' UpdateTransaction requests arrive one by one (one per
 * status tablet leader and batch), and each used to become an APPLY entry of its own. Raft puts
 * every proposal made while a processing pass awaits its fsync into the pass's NEXT Ready; so the
 * APPLYs that arrive meanwhile are held here and proposed as ONE entry (APPLY_TXNS) right before
 * that Ready is taken (RaftGroup.beforeNextReady) — the same Raft round they would have had, with
 * one entry, log record, apply step and RocksDB batch instead of one per request. With no pass
 * running they go with the next one (kicked at once: the APPLYs of that event-loop turn together).
 * With txn_apply_propose_during_sync (default) those that arrive during a sync are proposed in the
 * group's next Raft turn instead, the APPLYs of one loop iteration as one entry: the leader sends it
 * before its own fsync, so the followers persist it during the running sync rather than after it
 * (one fsync less on the apply lag's path; docs/transactions.md "Apply lag").
 */
import type { HybridTime } from '../../common/hybrid-time';
import type { TxnId } from '../../common/ids';
import { APPLY_TXNS_MAX, type TabletOp } from '../tablet/tablet-op';

export interface ApplyTarget {
  /** Propose the entry; resolves once it is applied here (TabletPeer.proposeOp). */
  proposeOp(op: TabletOp): Promise<void>;
  /** Run `fn` right before the tablet's Raft takes its next Ready (RaftGroup.beforeNextReady; `early`: or in its next turn during a sync). */
  beforeNextReady(fn: () => void, early: boolean): void;
}

interface Held {
  txnId: TxnId;
  commitHt: HybridTime;
  done: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

interface TabletQueue {
  target: ApplyTarget;
  held: Held[];
  byTxn: Map<TxnId, Held>;
}

export class ApplyCoalescer {
  private readonly queues = new Map<string, TabletQueue>();

  /** `early()`: propose during a sync too (txn_apply_propose_during_sync), see RaftGroup.beforeNextReady. */
  constructor(private readonly early: () => boolean = () => false) {}
  /** Entries proposed and transactions they carried (tests, metrics). */
  readonly counts = { entries: 0, txns: 0 };

  /** Resolves once an entry carrying this APPLY is applied on this leader; rejects with its error. */
  apply(tabletId: string, target: ApplyTarget, txnId: TxnId, commitHt: HybridTime): Promise<void> {
    let q = this.queues.get(tabletId);
    if (q !== undefined && q.target !== target) {
      this.flush(tabletId, q); // a new peer object for the tablet: the old one's go now (and fail)
      q = undefined;
    }
    if (q === undefined) {
      const nq: TabletQueue = { target, held: [], byTxn: new Map() };
      this.queues.set(tabletId, nq);
      target.beforeNextReady(() => this.flush(tabletId, nq), this.early());
      q = nq;
    }
    const dup = q.byTxn.get(txnId);
    if (dup !== undefined) return dup.done;
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const h: Held = { txnId, commitHt, done, resolve, reject };
    q.held.push(h);
    q.byTxn.set(txnId, h);
    return done;
  }

  /** Tablets with APPLYs held (tests check nothing is left behind). */
  get tabletsHolding(): number {
    return this.queues.size;
  }

  private flush(tabletId: string, q: TabletQueue): void {
    if (this.queues.get(tabletId) === q) this.queues.delete(tabletId);
    const held = q.held.splice(0, q.held.length);
    for (let i = 0; i < held.length; i += APPLY_TXNS_MAX) {
      const part = held.slice(i, i + APPLY_TXNS_MAX);
      const op: TabletOp = part.length === 1 ? { type: 'APPLY_TXN', txnId: part[0]!.txnId, commitHt: part[0]!.commitHt } : { type: 'APPLY_TXNS', txns: part.map((h) => ({ txnId: h.txnId, commitHt: h.commitHt })) };
      this.counts.entries++;
      this.counts.txns += part.length;
      let p: Promise<void>;
      try {
        p = q.target.proposeOp(op);
      } catch (e) {
        p = Promise.reject(e);
      }
      p.then(
        () => part.forEach((h) => h.resolve()),
        (e: unknown) => part.forEach((h) => h.reject(e)),
      );
    }
  }
}
