/**
 * The newest log entries in memory: a contiguous suffix [start, last] of the log, bounded by bytes
 * (log_cache_size_limit_mb). At the limit the oldest entries are evicted; reads below `start` go to
 * the segment files. Followers that keep up and the apply loop read only from here.
 */
import type { Entry } from '../types';
import { entryBytes } from './log-bounds';
import type { BudgetedCache, LogCacheBudget } from './log-cache-budget';

export class EntryCache implements BudgetedCache {
  /** Slots below `head` are evicted (undefined, so their buffers can be collected). */
  private ents: Array<Entry | undefined> = [];
  private head = 0;
  private bytes = 0;

  constructor(
    private readonly bytesMax: number,
    /** Index of the first cached entry (when empty: the next index to be appended). */
    private start: number,
    /** The server's budget over every tablet's cache (global_log_cache_size_limit_mb), if any. */
    private readonly budget?: LogCacheBudget,
  ) {
    budget?.register(this);
  }

  /** The cache is closed: its bytes leave the server's budget. */
  release(): void {
    this.reset(this.start);
    this.budget?.unregister(this);
  }

  shrinkTo(bytes: number): void {
    while (this.bytes > bytes && this.size() > 0) this.dropFirst();
    this.compactArray();
  }

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
      let dropped = 0;
      for (let k = keep; k < this.ents.length; k++) dropped += entryBytes(this.ents[k]!);
      this.addBytes(-dropped);
      this.ents.length = keep;
    }
    let added = 0;
    for (const e of entries) {
      this.ents.push(e);
      added += entryBytes(e);
    }
    this.addBytes(added);
    this.evict();
    this.budget?.enforce();
  }

  /** Drop cached entries <= index. */
  compactTo(index: number): void {
    while (this.size() > 0 && this.start <= index) this.dropFirst();
    if (this.size() === 0 && this.start <= index) this.start = index + 1;
  }

  reset(start: number): void {
    this.ents = [];
    this.head = 0;
    this.addBytes(-this.bytes);
    this.start = start;
  }

  private evict(): void {
    while (this.bytes > this.bytesMax && this.size() > 0) this.dropFirst();
    this.compactArray();
  }

  private compactArray(): void {
    if (this.head > 1024 && this.head > this.ents.length / 2) {
      this.ents = this.ents.slice(this.head);
      this.head = 0;
    }
  }

  private dropFirst(): void {
    this.addBytes(-entryBytes(this.ents[this.head]!));
    this.ents[this.head] = undefined;
    this.head++;
    this.start++;
  }

  private addBytes(delta: number): void {
    this.bytes += delta;
    this.budget?.add(delta);
  }
}
