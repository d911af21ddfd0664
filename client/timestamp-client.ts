/**
 * The client side of the timestamp oracle: callers ask for one timestamp each; concurrent askers
 * share one GetTimestamps RPC, and at most one is in flight — what arrives meanwhile waits for the
 * next one (Percolator's batching: the oracle's cost is per RPC, not per timestamp).
 */
import { DbError, ErrorCode } from '../common/errors';
import { oracleMethods } from '../rpc';
import type { MasterProxy } from './master-proxy';
import { Deadline } from './retry-policy';

/** Waiters per batch (the oracle's own limit is ORACLE_BATCH_MAX; bigger queues wait for the next RPC). */
export const TIMESTAMP_BATCH_MAX = 4096;
/** Waiters queued at most; beyond it getTimestamp answers BACKPRESSURE. */
export const TIMESTAMP_WAITERS_MAX = 100_000;

interface Waiter {
  resolve(ts: bigint): void;
  reject(e: unknown): void;
}

export interface TimestampStats {
  rpcs: number;
  timestamps: number;
}

export class TimestampClient {
  private queue: Waiter[] = [];
  private inFlight = false;
  private readonly stats: TimestampStats = { rpcs: 0, timestamps: 0 };

  constructor(
    private readonly master: MasterProxy,
    private readonly timeoutMs: number,
  ) {}

  /** One timestamp above every timestamp any client got before this call was made. */
  getTimestamp(): Promise<bigint> {
    if (this.queue.length >= TIMESTAMP_WAITERS_MAX) {
      return Promise.reject(new DbError(ErrorCode.BACKPRESSURE, `${TIMESTAMP_WAITERS_MAX} timestamp requests already queued`));
    }
    return new Promise<bigint>((resolve, reject) => {
      this.queue.push({ resolve, reject });
      if (!this.inFlight) this.sendNext();
    });
  }

  counters(): TimestampStats {
    return { ...this.stats };
  }

  private sendNext(): void {
    if (this.queue.length === 0) return;
    const batch = this.queue.splice(0, TIMESTAMP_BATCH_MAX);
    this.inFlight = true;
    this.stats.rpcs++;
    // Resending after an unknown outcome only wastes timestamps: the oracle never hands one out twice.
    this.master
      .call(oracleMethods().getTimestamps, { count: batch.length }, new Deadline(this.timeoutMs), true, true)
      .then((r) => {
        const first = r.first ?? 0n;
        if (first <= 0n || r.count !== batch.length) throw new DbError(ErrorCode.INTERNAL, `oracle answered ${r.count ?? 0} timestamps from ${first}, asked ${batch.length}`);
        this.stats.timestamps += batch.length;
        batch.forEach((w, i) => w.resolve(first + BigInt(i)));
      })
      .catch((e: unknown) => batch.forEach((w) => w.reject(e)))
      .finally(() => {
        this.inFlight = false;
        this.sendNext();
      });
  }
}
