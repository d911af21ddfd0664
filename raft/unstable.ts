/**
 * The tail of the log not yet handed to storage (etcd's log_unstable.go): entries appended or received
 * since the last Ready was persisted, and at most one incoming snapshot. `offset` is the index of
 * entries[0]; everything below it is (or, after advance(), will be) in storage.
 */
import { assert } from '../common/assert';
import type { Entry, Snapshot } from './types';

export class Unstable {
  snapshot: Snapshot | undefined;
  entries: Entry[] = [];

  constructor(public offset: number) {}

  lastIndex(): number | undefined {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    if (this.snapshot) return this.snapshot.meta.index;
    return undefined;
  }

  /** Term at `i` if the unstable part knows it. */
  term(i: number): number | undefined {
    if (i < this.offset) {
      if (this.snapshot && this.snapshot.meta.index === i) return this.snapshot.meta.term;
      return undefined;
    }
    const last = this.lastIndex();
    if (last === undefined || i > last) return undefined;
    return this.entries[i - this.offset]!.term;
  }

  /** The host persisted entries up to (i, t): drop them, unless they were overwritten meanwhile. */
  stableTo(i: number, t: number): void {
    const gt = this.term(i);
    if (gt === undefined || gt !== t || i < this.offset) return;
    this.entries = this.entries.slice(i + 1 - this.offset);
    this.offset = i + 1;
  }

  stableSnapTo(i: number): void {
    if (this.snapshot && this.snapshot.meta.index === i) this.snapshot = undefined;
  }

  restore(s: Snapshot): void {
    this.offset = s.meta.index + 1;
    this.entries = [];
    this.snapshot = s;
  }

  truncateAndAppend(ents: readonly Entry[]): void {
    const after = ents[0]!.index;
    if (after === this.offset + this.entries.length) {
      for (const e of ents) this.entries.push(e);
    } else if (after <= this.offset) {
      // Replaces everything unstable; storage entries >= after are replaced when the host appends.
      this.offset = after;
      this.entries = ents.slice();
    } else {
      this.entries = this.entries.slice(0, after - this.offset);
      for (const e of ents) this.entries.push(e);
    }
  }

  /** Entries in [lo, hi) — the caller guarantees offset <= lo. */
  slice(lo: number, hi: number): Entry[] {
    assert(lo >= this.offset && hi <= this.offset + this.entries.length && lo <= hi, `unstable.slice(${lo}, ${hi}) out of [${this.offset}, ${this.offset + this.entries.length})`);
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}
