/**
 * What the client's coalescers share (docs/client.md, "Request coalescing"): calls issued in one
 * event-loop turn are gathered by key (a tablet and what they are), and when the turn ends each
 * group goes as one request. A group may also be taken early (`take`), when it is full.
 */
export class TurnBatches<P> {
  private readonly pending = new Map<string, P>();
  private scheduled = false;

  constructor(private readonly send: (p: P) => void) {}

  get(key: string): P | undefined {
    return this.pending.get(key);
  }

  /** Remove the group of `key` (to send it now); the caller sends it. */
  take(key: string): void {
    this.pending.delete(key);
  }

  /** A new group for `key`, sent when the turn ends (or earlier through take). */
  add(key: string, p: P): P {
    this.pending.set(key, p);
    this.schedule();
    return p;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const all = [...this.pending.values()];
      this.pending.clear();
      for (const p of all) this.send(p);
    });
  }
}
