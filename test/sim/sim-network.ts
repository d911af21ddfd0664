/**
 * The simulated network: every message waits in one queue with a delivery tick; delivery picks a
 * random ready message (reordering). Faults: drop, duplicate, delay, and blocked directed links
 * (partitions are sets of blocked links). All randomness comes from the simulation's Rng.
 */
import type { NodeId, Rng } from '../../common';
import type { Message } from '../../raft';

export interface NetworkFaults {
  dropRate: number;
  dupRate: number;
  /** Extra delay in ticks, uniform in [0, delayTicksMax]. */
  delayTicksMax: number;
}

/** Bound on queued messages; beyond it new messages are dropped (a congested network). */
const QUEUE_MAX = 20_000;

interface InFlight {
  m: Message;
  at: number;
}

export class SimNetwork {
  private queue: InFlight[] = [];
  private readonly blocked = new Set<string>();
  faults: NetworkFaults = { dropRate: 0, dupRate: 0, delayTicksMax: 0 };
  sent = 0;
  dropped = 0;

  constructor(private readonly rng: Rng) {}

  send(m: Message, now: number): void {
    this.sent++;
    if (this.isBlocked(m.from, m.to) || this.rng.chance(this.faults.dropRate) || this.queue.length >= QUEUE_MAX) {
      this.dropped++;
      return;
    }
    const copies = this.rng.chance(this.faults.dupRate) ? 2 : 1;
    for (let i = 0; i < copies; i++) this.queue.push({ m, at: now + this.rng.int(this.faults.delayTicksMax + 1) });
  }

  /** Remove and return a random message deliverable at `now`, or undefined. Blocked links drop it. */
  takeRandom(now: number): Message | undefined {
    const n = this.queue.length;
    if (n === 0) return undefined;
    // Probe a few random slots first (cheap), then fall back to a scan.
    for (let tries = 0; tries < 4; tries++) {
      const i = this.rng.int(n);
      if (this.queue[i]!.at <= now) return this.removeAt(i);
    }
    const ready: number[] = [];
    for (let i = 0; i < n; i++) if (this.queue[i]!.at <= now) ready.push(i);
    if (ready.length === 0) return undefined;
    return this.removeAt(ready[this.rng.int(ready.length)]!);
  }

  /** Remove and return the oldest deliverable message (a healthy, in-order network). */
  takeOldest(now: number): Message | undefined {
    const i = this.queue.findIndex((x) => x.at <= now);
    if (i < 0) return undefined;
    const item = this.queue.splice(i, 1)[0]!;
    if (this.isBlocked(item.m.from, item.m.to)) {
      this.dropped++;
      return undefined;
    }
    return item.m;
  }

  private removeAt(i: number): Message | undefined {
    const last = this.queue.length - 1;
    const item = this.queue[i]!;
    this.queue[i] = this.queue[last]!;
    this.queue.pop();
    if (this.isBlocked(item.m.from, item.m.to)) {
      this.dropped++;
      return undefined;
    }
    return item.m;
  }

  size(): number {
    return this.queue.length;
  }

  isBlocked(from: NodeId, to: NodeId): boolean {
    return this.blocked.size > 0 && this.blocked.has(`${from}>${to}`);
  }

  block(from: NodeId, to: NodeId): void {
    this.blocked.add(`${from}>${to}`);
  }

  heal(): void {
    this.blocked.clear();
  }

  /** Describe the current partition (for failure reports). */
  describe(): string {
    return [...this.blocked].sort().join(' ');
  }
}
