/**
 * Phases of one table's lock traffic (docs/rows.md, "Coalesced on the wire"): the coalesced lockRow
 * requests, renew/unlock requests and writes carrying row locks of one client, in flight. A coalesced
 * group of one phase is held while requests of another phase are in flight, so lock holders move in
 * step: their lockRow calls share requests, then their writes share one request (and Raft entry) per
 * tablet, then their unlocks — instead of falling into groups whose phases differ, one group's writes
 * in a Raft round while another's lock calls are in flight, each group's writes an entry of their own
 * (a c16 lock + write + unlock cycle took 0.36 entries and 1.34 requests a cycle that way:
 * bench/results/2026-12-08-rows-9.md). Writes that carry no lock are not part of it; every hold is
 * bounded (client/turn-batches.ts, HELD_GROUP_MS_MAX), and a lone caller waits for nothing (nothing
 * else is in flight).
 */
export type LockPhase = 'lock' | 'held' | 'write';

export class LockPhases {
  private readonly counts: Record<LockPhase, number> = { lock: 0, held: 0, write: 0 };
  private readonly listeners: Array<() => void> = [];

  /** Requests of phases other than `phase` in flight now. */
  others(phase: LockPhase): number {
    return this.counts.lock + this.counts.held + this.counts.write - this.counts[phase];
  }

  /** Called whenever a tracked request settles (a coalescer looks at its held groups again). */
  onSettled(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Counts `request` in `phase` until it settles either way. */
  track(phase: LockPhase, request: Promise<unknown>): void {
    this.counts[phase]++;
    const done = (): void => {
      this.counts[phase]--;
      for (const l of this.listeners) l();
    };
    request.then(done, done);
  }
}
