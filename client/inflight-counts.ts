/**
 * Requests in flight per key (a tablet id): the row and row-lock coalescers send a call alone,
 * at once, while few requests to its tablet are in flight (docs/rows.md).
 */
export class InflightCounts {
  private readonly counts = new Map<string, number>();

  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** Counts `request` under `key` until it settles (either way). */
  track(key: string, request: Promise<unknown>): void {
    this.counts.set(key, this.get(key) + 1);
    const done = (): void => {
      const n = this.get(key) - 1;
      if (n <= 0) this.counts.delete(key);
      else this.counts.set(key, n);
    };
    request.then(done, done);
  }
}
