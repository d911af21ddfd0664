/**
 * Where each live log entry sits on disk: term, segment sequence number, offset and record length,
 * for every index in [base, base + size). Kept for all live entries (about 32 bytes each: a 64 MB
 * segment of 100-byte entries indexes in ~16 MB), so term() never touches the disk and entries()
 * needs one pread per contiguous run.
 */
import { assert } from '../../common/assert';

export interface EntryLocation {
  term: number;
  seq: number;
  offset: number;
  recordBytes: number;
}

export class WalIndex {
  private terms: number[] = [];
  private seqs: number[] = [];
  private offsets: number[] = [];
  private lens: number[] = [];
  /** Skipped prefix of the arrays (compaction drops from the front without copying every time). */
  private head = 0;

  /** `base` is the first index this index can hold (log start + 1). */
  constructor(private base: number) {}

  firstIndex(): number {
    return this.base;
  }

  /** Last indexed entry, or base - 1 when empty. */
  lastIndex(): number {
    return this.base + this.size() - 1;
  }

  size(): number {
    return this.terms.length - this.head;
  }

  has(index: number): boolean {
    return index >= this.base && index <= this.lastIndex();
  }

  term(index: number): number {
    assert(this.has(index), `wal index has no entry ${index}`);
    return this.terms[this.head + index - this.base]!;
  }

  get(index: number): EntryLocation {
    assert(this.has(index), `wal index has no entry ${index}`);
    const k = this.head + index - this.base;
    return { term: this.terms[k]!, seq: this.seqs[k]!, offset: this.offsets[k]!, recordBytes: this.lens[k]! };
  }

  /** Add `index`, dropping every entry at or above it first (a conflicting suffix). */
  put(index: number, term: number, seq: number, offset: number, recordBytes: number): void {
    assert(index >= this.base && index <= this.lastIndex() + 1, `wal index: entry ${index} leaves a gap after ${this.lastIndex()}`);
    const k = this.head + index - this.base;
    if (k < this.terms.length) {
      this.terms.length = k;
      this.seqs.length = k;
      this.offsets.length = k;
      this.lens.length = k;
    }
    this.terms.push(term);
    this.seqs.push(seq);
    this.offsets.push(offset);
    this.lens.push(recordBytes);
  }

  /** Forget every entry <= index; the index then starts at index + 1. */
  compactTo(index: number): void {
    if (index < this.base) return;
    const drop = Math.min(index - this.base + 1, this.size());
    this.head += drop;
    this.base = index + 1;
    if (this.size() === 0) this.clear(this.base);
    else if (this.head > 4096 && this.head > this.terms.length / 2) {
      this.terms = this.terms.slice(this.head);
      this.seqs = this.seqs.slice(this.head);
      this.offsets = this.offsets.slice(this.head);
      this.lens = this.lens.slice(this.head);
      this.head = 0;
    }
  }

  clear(base: number): void {
    this.terms = [];
    this.seqs = [];
    this.offsets = [];
    this.lens = [];
    this.head = 0;
    this.base = base;
  }
}
