/**
 * The in-memory Raft log with etcd MemoryStorage semantics: `ents[0]` is a dummy entry holding the
 * index and term of the last compacted entry (the snapshot point), so term(snapshotIndex) answers
 * without keeping the compacted entry itself.
 */
import { assert } from '../../common/assert';
import type { Entry } from '../types';
import { EntryType } from '../types';
import { compactedError, limitBytes, unavailableError } from './log-bounds';

export class MemoryLog {
  private ents: Entry[];

  constructor(snapshotIndex = 0, snapshotTerm = 0) {
    this.ents = [dummy(snapshotIndex, snapshotTerm)];
  }

  clone(): MemoryLog {
    const c = new MemoryLog();
    c.ents = this.ents.slice();
    return c;
  }

  /** Index of the dummy entry: the last compacted (snapshot) index. */
  offset(): number {
    return this.ents[0]!.index;
  }

  firstIndex(): number {
    return this.offset() + 1;
  }

  lastIndex(): number {
    return this.offset() + this.ents.length - 1;
  }

  term(i: number): number {
    const off = this.offset();
    if (i < off) throw compactedError(i, off + 1);
    if (i > this.lastIndex()) throw unavailableError(i, this.lastIndex());
    return this.ents[i - off]!.term;
  }

  entries(lo: number, hi: number, bytesMax?: number): Entry[] {
    const off = this.offset();
    if (lo <= off) throw compactedError(lo, off + 1);
    assert(hi <= this.lastIndex() + 1, `entries hi ${hi} is beyond last index ${this.lastIndex()}`);
    assert(lo <= hi, `entries lo ${lo} > hi ${hi}`);
    // Only a dummy entry: nothing to return.
    if (this.ents.length === 1) return [];
    return limitBytes(this.ents.slice(lo - off, hi - off), bytesMax);
  }

  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    assertContiguous(entries);
    const first = this.firstIndex();
    const last = entries[entries.length - 1]!.index;
    // Everything already compacted: nothing to do (etcd ignores such appends).
    if (last < first) return;
    let es = entries;
    if (first > es[0]!.index) es = es.slice(first - es[0]!.index);
    const at = es[0]!.index - this.offset();
    assert(at <= this.ents.length, `missing log entry: last index ${this.lastIndex()}, appending at ${es[0]!.index}`);
    // An entry at index i replaces every entry at index >= i (Raft's conflicting-suffix rule).
    if (at < this.ents.length) this.ents.length = at;
    for (const e of es) this.ents.push(e);
  }

  /** Discard entries up to and including `index`; it becomes the dummy entry. */
  compact(index: number): void {
    const off = this.offset();
    if (index <= off) throw compactedError(index, off + 1);
    assert(index <= this.lastIndex(), `compact ${index} is beyond last index ${this.lastIndex()}`);
    const i = index - off;
    const rest = this.ents.slice(i + 1);
    this.ents = [dummy(index, this.ents[i]!.term), ...rest];
  }

  /** Replace the whole log with an empty one based at (index, term). */
  reset(index: number, term: number): void {
    this.ents = [dummy(index, term)];
  }
}

function dummy(index: number, term: number): Entry {
  return { index, term, type: EntryType.noop, data: new Uint8Array(0) };
}

export function assertContiguous(entries: readonly Entry[]): void {
  for (let k = 1; k < entries.length; k++) {
    assert(entries[k]!.index === entries[k - 1]!.index + 1, `appended entries not contiguous at ${entries[k]!.index}`);
    assert(entries[k]!.term >= entries[k - 1]!.term, `appended entries' terms go backwards at ${entries[k]!.index}`);
  }
}
