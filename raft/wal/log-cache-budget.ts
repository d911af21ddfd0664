/**
 * One server's budget for the Raft log caches of all its tablets (YugabyteDB's
 * global_log_cache_size_limit_mb). Each tablet's EntryCache is bounded by log_cache_size_limit_mb on
 * its own; without a shared bound a tserver hosting many tablets could keep up to that much per
 * tablet in memory, long after the entries were applied and replicated. When the caches together
 * exceed the budget, the oldest entries of the largest caches go first: those are the ones most
 * likely applied and replicated everywhere already, and a tablet that is busy now keeps its newest
 * entries. An evicted entry is read back from the segment files when needed (a slow follower, an
 * apply behind), as any entry older than a tablet's own cache is.
 */

/** What the budget needs of a cache: its size, and dropping its oldest entries. */
export interface BudgetedCache {
  cachedBytes(): number;
  /** Drop oldest entries until at most `bytes` remain (or the cache is empty). */
  shrinkTo(bytes: number): void;
}

export class LogCacheBudget {
  private readonly caches = new Set<BudgetedCache>();
  private total = 0;
  private evictedBytes = 0;

  /** `limitBytes`: read at every check, so a runtime flag change takes effect at the next append. */
  constructor(private readonly limitBytes: () => number) {}

  register(c: BudgetedCache): void {
    this.caches.add(c);
  }

  /** The cache is closed: forget it (its bytes must have been released through `add` first). */
  unregister(c: BudgetedCache): void {
    this.caches.delete(c);
  }

  /** A registered cache grew (positive) or shrank (negative) by `delta` bytes. */
  add(delta: number): void {
    this.total += delta;
  }

  cachedBytes(): number {
    return this.total;
  }

  /** Bytes evicted to keep within the budget since the server started. */
  evicted(): number {
    return this.evictedBytes;
  }

  /**
   * Over the budget: cut the largest caches down to a common level, oldest entries first, so that
   * together they end a sixteenth below the budget (a server at its budget then does not walk its
   * caches on every append). Smaller caches than that level keep everything.
   */
  enforce(): void {
    const limit = this.limitBytes();
    if (this.total <= limit) return;
    const low = limit - Math.floor(limit / 16);
    const excess = this.total - low;
    const caches = [...this.caches].map((c) => ({ c, bytes: c.cachedBytes() })).sort((x, y) => y.bytes - x.bytes);
    // The level L with sum(max(0, bytes - L)) = excess: the k largest go down to L when L is at
    // least the (k+1)-th size.
    let level = 0;
    let sum = 0;
    for (let k = 0; k < caches.length; k++) {
      sum += caches[k]!.bytes;
      const l = (sum - excess) / (k + 1);
      const next = caches[k + 1]?.bytes ?? 0;
      if (l >= next) {
        level = Math.max(0, Math.floor(l));
        break;
      }
    }
    const before = this.total;
    for (const { c, bytes } of caches) {
      if (bytes <= level) break;
      c.shrinkTo(level);
    }
    this.evictedBytes += before - this.total;
  }
}
