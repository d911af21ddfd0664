/**
 * The newest log entries in memory: a contiguous suffix [start, last] of the log, bounded by bytes
 * (log_cache_size_limit_mb). At the limit the oldest entries are evicted; reads below `start` go to
 * the segment files. Followers that keep up and the apply loop read only from here.
 */
import type { Entry } from '../types';
import { entryBytes } from './log-bounds';

export class EntryCache {
  private ents: Entry[] = [];
  private head = 0;
  private bytes = 0;

  constructor(
    private readonly bytesMax: number,
    /** Index of the first cached entry (when empty: the next index to be appended). */
    private start: number,
  ) {}

  startIndex(): number {
    return this.start;
  }

  cachedBytes(): number {
    return this.bytes;
  }

  size(): number {
    return this.ents.length - this.head;
  }

  /** The cached entry at `index`, or undefined when it is not cached. */
  get(index: number): Entry | undefined {
    if (index < this.start) return undefined;
    return this.ents[this.head + index - this.start];
  }

  /** Append contiguous entries; an entry at an already cached index replaces that suffix. */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = entries[0]!.index;
    if (first < this.start || first > this.start + this.size()) this.reset(first);
    else {
      const keep = this.head + first - this.start;
      for (let k = keep; k < this.ents.length; k++) this.bytes -= entryBytes(this.ents[k]!);
      this.ents.length = keep;
    }
    for (const e of entries) {
      this.ents.push(e);
      this.bytes += entryBytes(e);
    }
    this.evict();
  }

  /** Drop cached entries <= index. */
  compactTo(index: number): void {
    while (this.size() > 0 && this.start <= index) this.dropFirst();
    if (this.size() === 0 && this.start <= index) this.start = index + 1;
  }

  reset(start: number): void {
    this.ents = [];
    this.head = 0;
    this.bytes = 0;
    this.start = start;
  }

  private evict(): void {
    while (this.bytes > this.bytesMax && this.size() > 0) this.dropFirst();
    if (this.head > 1024 && this.head > this.ents.length / 2) {
      this.ents = this.ents.slice(this.head);
      this.head = 0;
    }
  }

  private dropFirst(): void {
    this.bytes -= entryBytes(this.ents[this.head]!);
    this.head++;
    this.start++;
  }
}
