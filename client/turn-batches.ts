/**
 * What the client's coalescers share (docs/client.md, "Request coalescing"): calls issued in one
 * event-loop turn are gathered by key (a tablet and what they are), and when the turn ends each
 * group goes as one request. A group may also be taken early (`take`), when it is full.
 *
 * With `hold`, a group the predicate holds at the turn's end stays pending (later calls join it)
 * until `wake` is called — the row coalescers hold a tablet's group while its requests in flight
 * are at their bound, and wake when one settles (docs/rows.md, "Coalesced on the wire").
 */
export class TurnBatches<P> {
  private readonly pending = new Map<string, P>();
  private scheduled = false;

  constructor(
    private readonly send: (p: P) => void,
    private readonly hold?: (p: P) => boolean,
  ) {}

  /** Something a held group waits for changed: look at every pending group again at the turn's end. */
  wake(): void {
    if (this.pending.size > 0) this.schedule();
  }

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
      for (const [key, p] of [...this.pending]) {
        if (this.hold?.(p)) continue; // stays pending: wake() looks again
        this.pending.delete(key);
        this.send(p);
      }
    });
  }
}
