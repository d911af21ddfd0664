/**
 * Hybrid logical clock (HLC). `now()` never goes backwards even when the wall clock does, and
 * `update(received)` ratchets the clock past every hybrid time seen on a message, so causally
 * later events always get larger hybrid times.
 */
import { assert } from './assert';
import type { Clock } from './clock';
import { htFrom, htPhysicalMicros, htLogical, LOGICAL_MASK, type HybridTime } from './hybrid-time';

export class HybridClock {
  private last: HybridTime = 0n;
  constructor(private readonly clock: Clock) {}

  now(): HybridTime {
    const wall = htFrom(Math.max(0, this.clock.nowMicros()), 0);
    if (wall > this.last) {
      this.last = wall;
    } else {
      // Wall clock did not advance (or stepped back): bump the logical part; on overflow of the
      // logical bits advance the physical part by one microsecond.
      const next = htLogical(this.last) < Number(LOGICAL_MASK) ? this.last + 1n : htFrom(htPhysicalMicros(this.last) + 1n, 0);
      assert(next > this.last);
      this.last = next;
    }
    return this.last;
  }

  /** Observe a hybrid time from another node. Afterwards now() > received. */
  update(received: HybridTime): void {
    if (received > this.last) this.last = received;
  }

  /** The largest hybrid time handed out or observed so far (no side effect). */
  peek(): HybridTime {
    return this.last;
  }

  /** Physical wall time in microseconds as this clock sees it (with any skew applied). */
  wallMicros(): number {
    return this.clock.nowMicros();
  }
}
