/**
 * The Raft log as the core sees it (etcd's log.go): storage (persisted, possibly compacted at the
 * front) followed by the unstable tail, plus the commit and applied indexes.
 *
 * Invariants: applied <= committed; firstIndex()-1 <= applied (compaction only below applied);
 * entries handed out for applying are persisted (index < unstable.offset), so a replica never applies
 * — and a single voter never counts as committed — an entry it has not yet made durable.
 */
import { assert } from '../common/assert';
import { DbError } from '../common/errors';
import type { Entry, Snapshot } from './types';
import { Unstable } from './unstable';
import type { LogStorage } from './wal/log-storage';
import { limitBytes } from './wal/log-bounds';

export class RaftLog {
  readonly unstable: Unstable;
  committed: number;
  applied: number;

  constructor(
    readonly storage: LogStorage,
    applied: number,
    /** Bound on the bytes of committed entries handed to the host per Ready. */
    private readonly committedBytesMaxPerReady: number,
  ) {
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    this.unstable = new Unstable(last + 1);
    // Everything up to the snapshot point is committed and applied by definition.
    this.committed = first - 1;
    this.applied = Math.max(first - 1, applied);
  }

  firstIndex(): number {
    if (this.unstable.snapshot) return this.unstable.snapshot.meta.index + 1;
    return this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.lastIndex() ?? this.storage.lastIndex();
  }

  /**
   * Last index that is persisted and belongs to our log (the host synced it). While an incoming
   * snapshot is unpersisted nothing is claimed (0): the storage may still hold a divergent old log.
   */
  persistedIndex(): number {
    if (this.unstable.snapshot) return 0;
    return this.unstable.offset - 1;
  }

  /** Term of entry `i`, or undefined if compacted or beyond the end. */
  term(i: number): number | undefined {
    const u = this.unstable.term(i);
    if (u !== undefined) return u;
    if (i < this.firstIndex() - 1 || i > this.lastIndex()) return undefined;
    if (i >= this.unstable.offset) return undefined;
    try {
      return this.storage.term(i);
    } catch (e) {
      if (isCompactedOrUnavailable(e)) return undefined;
      throw e;
    }
  }

  lastTerm(): number {
    const t = this.term(this.lastIndex());
    assert(t !== undefined, 'term of the last index must be known');
    return t;
  }

  matchTerm(i: number, t: number): boolean {
    return this.term(i) === t;
  }

  /** Raft §5.4.1: a candidate's log is at least as up to date as ours. */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Entries in [lo, hi) within `bytesMax` (at least one). Returns undefined when lo was compacted
   * (the caller sends a snapshot instead).
   */
  entries(lo: number, hi: number, bytesMax?: number): Entry[] | undefined {
    if (lo >= hi) return [];
    if (lo < this.firstIndex()) return undefined;
    assert(hi <= this.lastIndex() + 1, `entries(${lo}, ${hi}) beyond last index ${this.lastIndex()}`);
    const off = this.unstable.offset;
    let out: Entry[] = [];
    if (lo < off) {
      try {
        out = this.storage.entries(lo, Math.min(hi, off), bytesMax);
      } catch (e) {
        if (isCompactedOrUnavailable(e)) return undefined;
        throw e;
      }
      // Storage stopped early at the byte limit: do not add unstable entries after a gap.
      if (out.length < Math.min(hi, off) - lo) return out;
    }
    if (hi > off) {
      const u = this.unstable.slice(Math.max(lo, off), hi);
      out = out.length > 0 ? out.concat(u) : u;
      out = limitBytes(out, bytesMax);
    }
    return out;
  }

  /** Index of the first entry in `ents` that conflicts with (or extends) our log; 0 if none. */
  findConflict(ents: readonly Entry[]): number {
    for (const e of ents) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * Fast back-off: the largest index <= `index` whose term is <= `term` (etcd's findConflictByTerm).
   * The leader can skip every entry of a term the follower cannot share.
   */
  findConflictByTerm(index: number, term: number): number {
    let i = Math.min(index, this.lastIndex());
    const floor = this.firstIndex() - 1;
    // Bounded by the log length; each step moves one entry. Stop at the compaction point.
    for (; i > floor; i--) {
      const t = this.term(i);
      if (t === undefined || t <= term) return i;
    }
    return i;
  }

  /** Append leader entries after (prevIndex, prevTerm); returns the new last index, or undefined on mismatch. */
  maybeAppend(prevIndex: number, prevTerm: number, commit: number, ents: readonly Entry[]): number | undefined {
    if (!this.matchTerm(prevIndex, prevTerm)) return undefined;
    const lastNew = prevIndex + ents.length;
    const ci = this.findConflict(ents);
    if (ci !== 0) {
      assert(ci > this.committed, `entry ${ci} conflicts with committed entry (committed ${this.committed})`);
      this.append(ents.slice(ci - (prevIndex + 1)));
    }
    this.commitTo(Math.min(commit, lastNew));
    return lastNew;
  }

  append(ents: readonly Entry[]): number {
    if (ents.length === 0) return this.lastIndex();
    assert(ents[0]!.index - 1 >= this.committed, `append at ${ents[0]!.index} would overwrite committed ${this.committed}`);
    this.unstable.truncateAndAppend(ents);
    return this.lastIndex();
  }

  commitTo(c: number): void {
    if (c > this.committed) {
      assert(c <= this.lastIndex(), `commit ${c} beyond last index ${this.lastIndex()}`);
      this.committed = c;
    }
  }

  appliedTo(i: number): void {
    if (i === 0) return;
    assert(i <= this.committed && i >= this.applied, `appliedTo(${i}) outside [${this.applied}, ${this.committed}]`);
    this.applied = i;
  }

  /** Highest index that may be handed out for applying: committed and persisted. */
  private applyUpTo(): number {
    if (this.unstable.snapshot) return this.applied;
    return Math.min(this.committed, this.unstable.offset - 1);
  }

  hasNextCommittedEnts(): boolean {
    return this.applyUpTo() > this.applied;
  }

  nextCommittedEnts(): Entry[] {
    const hi = this.applyUpTo();
    if (hi <= this.applied) return [];
    return this.entries(this.applied + 1, hi + 1, this.committedBytesMaxPerReady) ?? assertNoGap(this.applied + 1);
  }

  /** Snapshot to send a follower: an incoming one still unstable, else what the host stored. */
  snapshot(): Snapshot | undefined {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }

  restore(s: Snapshot): void {
    this.committed = s.meta.index;
    this.unstable.restore(s);
  }
}

function assertNoGap(i: number): never {
  throw new Error(`committed entry ${i} is compacted but not applied`);
}

export function isCompactedOrUnavailable(e: unknown): boolean {
  return e instanceof DbError && (e.details['compacted'] === true || e.details['unavailable'] === true);
}
