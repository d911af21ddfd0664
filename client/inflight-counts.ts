/**
 * Requests in flight per key (a tablet id): the row and row-lock coalescers hold a tablet's calls
 * while its requests in flight are at their bound (or, when asked, send a call alone while few
 * are; docs/rows.md).
 */
export class InflightCounts {
  private readonly counts = new Map<string, number>();

  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** Counts `request` under `key` until it settles (either way), then calls `settled`. */
  track(key: string, request: Promise<unknown>, settled?: () => void): void {
    this.counts.set(key, this.get(key) + 1);
    const done = (): void => {
      const n = this.get(key) - 1;
      if (n <= 0) this.counts.delete(key);
      else this.counts.set(key, n);
      settled?.();
    };
    request.then(done, done);
  }
}
