/**
 * What the client's coalescers share (docs/client.md, "Request coalescing"): calls issued in one
 * event-loop turn are gathered by key (a tablet and what they are), and when the turn ends each
 * group goes as one request. A group may also be taken early (`take`), when it is full.
 *
 * With `hold`, a group the predicate holds at the turn's end stays pending (later calls join it)
 * until `wake` is called — the row coalescers hold a tablet's group while its requests in flight
 * are at their bound, and wake when one settles (docs/rows.md, "Coalesced on the wire") — but
 * never longer than HELD_GROUP_MS_MAX: a request in flight that stalls (a paused leader, a
 * timeout longer than the held calls') does not hold the others past it.
 */
export const HELD_GROUP_MS_MAX = 100;

export class TurnBatches<P> {
  private readonly pending = new Map<string, P>();
  /** When each held group was first held (performance.now()). */
  private readonly heldSince = new Map<string, number>();
  private scheduled = false;
  private holdTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly send: (p: P) => void,
    private readonly hold?: (p: P) => boolean,
    private readonly heldMsMax = HELD_GROUP_MS_MAX,
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
    this.heldSince.delete(key);
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
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const now = performance.now();
    for (const [key, p] of [...this.pending]) {
      if (this.hold?.(p)) {
        const since = this.heldSince.get(key);
        if (since === undefined) this.heldSince.set(key, now);
        if (since === undefined || now - since < this.heldMsMax) continue; // stays pending: wake() or the timer looks again
      }
      this.pending.delete(key);
      this.heldSince.delete(key);
      this.send(p);
    }
    if (this.heldSince.size > 0 && this.holdTimer === undefined) {
      this.holdTimer = setTimeout(() => {
        this.holdTimer = undefined;
        this.wake();
      }, this.heldMsMax);
      this.holdTimer.unref();
    }
  }
}
