/**
 * The leader's view of one follower (etcd's tracker/progress.go).
 *
 * States: probe — the leader does not know where the follower's log matches; it sends one append at a
 * time and waits for the reply (or a heartbeat reply) before the next. replicate — the follower is
 * known to match up to `match`; the leader pipelines appends optimistically, advancing `next` as it
 * sends, bounded by the inflights window. snapshot — the follower needs entries the leader compacted;
 * the leader sent a snapshot and sends nothing else until it is reported done or failed.
 */
import { Inflights } from './inflights';

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export class Progress {
  /** Highest index known to be on the follower's durable log. */
  match = 0;
  /** Next index the leader will send. Invariant: match < next. */
  next: number;
  state: ProgressState = 'probe';
  /** In snapshot state: the index of the snapshot sent. */
  pendingSnapshot = 0;
  /** Tick at which the pending snapshot was sent; a snapshot lost without a report is retried. */
  snapshotSentTick = 0;
  /** Any message from the follower since the last check-quorum round. */
  recentActive = false;
  /** Probe state: an append is outstanding, send no other until a reply. */
  msgAppFlowPaused = false;
  /** Leader tick echoed by the follower's latest heartbeat reply (lease accounting); -1 = none. */
  leaseAckTick = -1;
  readonly inflights: Inflights;

  constructor(
    next: number,
    public isLearner: boolean,
    inflightMsgsMax: number,
    inflightBytesMax: number,
  ) {
    this.next = next;
    this.inflights = new Inflights(inflightMsgsMax, inflightBytesMax);
  }

  private resetState(state: ProgressState): void {
    this.msgAppFlowPaused = false;
    this.pendingSnapshot = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    // After a snapshot the follower holds at least the snapshot: resume right after it.
    if (this.state === 'snapshot') {
      const pending = this.pendingSnapshot;
      this.resetState('probe');
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState('probe');
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState('replicate');
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number, tick: number): void {
    this.resetState('snapshot');
    this.pendingSnapshot = snapshotIndex;
    this.snapshotSentTick = tick;
  }

  /** The leader sent `entries` entries (of `bytes` bytes) starting at `next`. */
  sentEntries(entries: number, bytes: number): void {
    if (this.state === 'replicate') {
      if (entries > 0) {
        this.next += entries;
        this.inflights.add(this.next - 1, bytes);
      }
    } else if (this.state === 'probe') {
      this.msgAppFlowPaused = true;
    }
  }

  /** An ack for `n`: returns whether match advanced. */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.msgAppFlowPaused = false;
    }
    this.next = Math.max(this.next, n + 1);
    return updated;
  }

  /**
   * A rejection of the append at prevIndex `rejected`; `matchHint` is the highest index the follower's
   * log may still match at. Returns false for a stale rejection (an answer to an older message).
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === 'replicate') {
      // Stale: we already know the follower matches beyond the rejected point.
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    // Probe: only the rejection of the append we are waiting for counts.
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.msgAppFlowPaused = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.msgAppFlowPaused;
      case 'replicate':
        return this.inflights.full();
      case 'snapshot':
        return true;
    }
  }
}
