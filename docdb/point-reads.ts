/**
 * Point reads of rows the row cache misses, on iterators REUSED across reads (docs/rows.md, "Rows
 * that are read-modify-written stay cached"). Opening a RocksDB iterator (a snapshot and a merging
 * iterator over every memtable and SST file, on the event loop) and ending it (a thread-pool call)
 * cost about as much as reading the row: an increment of a row the cache does not hold paid both
 * for every row. Here an iterator over the whole RegularDB data range serves read after read: seek to
 * the row, read its entries (a small read-ahead, so little is read past it), leave the iterator for
 * the next reader.
 *
 * Why a reused iterator reads the row as it is now: its snapshot is older than the read, so the read
 * is used only if the row cache says no write of THAT row was in flight or began or ended since the
 * row-cache token taken before the iterator was opened (RowCache.current, the rule a cache fill
 * follows); every RegularDB write goes through FrontierDb.write, which tells the cache. Otherwise,
 * and for a row longer than the read-ahead budget, the caller reads the row with a fresh iterator of
 * its own (DocDb.getRow). Iterators are kept at most POINT_ITERATOR_AGE_MS (a snapshot pins the
 * memtables and files it sees) and POINT_ITERATORS_IDLE_MAX at a time; one reader uses one at a time.
 */
import type { DocKey } from './doc-db-api';
import type { KvEngine, KvIterator } from './kv-engine';
import type { CellVersion } from './row-assembler';
import type { RowCache } from './row-cache';
import { decodeDocKeyBuf, decodeStored, parseRegularKey, REGULAR_DATA_END, REGULAR_DATA_START } from './storage-keys';

/** Idle reused iterators kept at most (one per concurrent reader, up to this; the extra ones are ended). */
export const POINT_ITERATORS_IDLE_MAX = 64;
/** A reused iterator is ended once this old (its snapshot pins memtables and SST files). */
export const POINT_ITERATOR_AGE_MS = 1000;
/**
 * Read-ahead per native call after the first entry (the default of docdb_point_read_ahead_bytes): a few versions of a row, little past it. The
 * binding turns every entry it read into two Buffers on the event loop (about 2 us each on the
 * bench machine): at 512 bytes a row of six ~30-byte entries paid for ~18, at 256 for ~9 (raw
 * binding, 6 alternated rounds, loaded: median 83 against 106 us CPU per present-row read); a row
 * of up to ~9 entries still takes two native reads (bench/results/2026-12-07-rows-6.md).
 */
export const POINT_READ_AHEAD_BYTES = 256;
/** Native reads one row may take on a reused iterator; a longer row is read with its own iterator. */
export const POINT_READ_CALLS_MAX = 4;

interface Pooled {
  it: KvIterator;
  /** The row cache's token taken before the iterator was opened. */
  token: number;
  bornMs: number;
}

function startsWith(key: Uint8Array, prefix: Buffer): boolean {
  return key.length >= prefix.length && prefix.compare(key, 0, prefix.length) === 0;
}

export class PointReads {
  private readonly idle: Pooled[] = [];
  private sweepTimer: NodeJS.Timeout | undefined;
  private closed = false;
  readonly metrics = { reads: 0, opened: 0, stale: 0, long: 0 };

  constructor(
    private readonly engine: KvEngine,
    private readonly cache: RowCache,
    /** docdb_point_read_iterators: false sends every read the caller's way (A/B). */
    private readonly enabled: () => boolean = () => true,
    /** docdb_point_read_ahead_bytes: the read-ahead of iterators opened from now on. */
    private readonly readAheadBytes: () => number = () => POINT_READ_AHEAD_BYTES,
  ) {}

  /**
   * The committed versions of the row whose encoded DocKey is `docKey` (hex `hex`, `key` decoded) as
   * the RegularDB holds them now, also filled into the row cache; undefined when a reused iterator
   * cannot tell (the caller reads the row with a fresh iterator).
   */
  async read(docKey: Buffer, hex: string, key: DocKey): Promise<{ key: DocKey; versions: CellVersion[] } | undefined> {
    const p = this.enabled() ? this.take(hex) : undefined;
    if (!p) return undefined;
    let versions: CellVersion[] | undefined;
    try {
      versions = await this.versionsOf(p.it, docKey);
    } catch (e) {
      p.it.close().catch(() => undefined);
      throw e;
    }
    this.give(p);
    this.metrics.reads++;
    if (versions === undefined) {
      this.metrics.long++;
      return undefined;
    }
    if (!this.cache.current(p.token, hex)) {
      this.metrics.stale++;
      return undefined;
    }
    const row = { key: versions.length > 0 ? decodeDocKeyBuf(docKey) : key, versions };
    this.cache.fill(p.token, hex, row.key, versions.slice());
    return row;
  }

  /** The row's versions through `it` (undefined: more than POINT_READ_CALLS_MAX native reads). */
  private async versionsOf(it: KvIterator, docKey: Buffer): Promise<CellVersion[] | undefined> {
    it.seek(docKey);
    const versions: CellVersion[] = [];
    // An engine without nextBatch hands over one entry a call, most of them without a native read
    // (RocksDB under a split child's view): a budget in entries instead.
    const calls = it.nextBatch ? POINT_READ_CALLS_MAX : POINT_READ_CALLS_MAX * 16;
    for (let call = 0; call < calls; call++) {
      const batch = it.nextBatch ? await it.nextBatch() : await it.next().then((e) => (e ? [e] : undefined));
      if (batch === undefined) return versions;
      for (const [k, v] of batch) {
        if (!startsWith(k, docKey)) return versions;
        const pk = parseRegularKey(Buffer.isBuffer(k) ? k : Buffer.from(k.buffer, k.byteOffset, k.byteLength), docKey.length);
        versions.push({ sub: pk.sub, ht: pk.ht, writeId: pk.writeId, own: false, value: decodeStored(v) });
      }
    }
    return undefined;
  }

  /**
   * An iterator that can read the row `hex` as it is now: the youngest idle one (the highest token:
   * if it cannot, no older one can) when the row was not written since it opened, else a new one;
   * undefined while the row is being written (or a write that cannot be placed by row is).
   */
  private take(hex: string): Pooled | undefined {
    const now = performance.now();
    let p = this.idle.pop();
    while (p && (now - p.bornMs >= POINT_ITERATOR_AGE_MS || !this.cache.tokenLive(p.token))) {
      this.end(p);
      p = this.idle.pop();
    }
    if (p && this.cache.current(p.token, hex)) return p;
    if (p) this.idle.push(p);
    // The token first: a write that ends between it and the open makes the row not current.
    const token = this.cache.token();
    if (this.closed || !this.cache.current(token, hex)) return undefined;
    this.metrics.opened++;
    return { it: this.engine.iterator({ gte: REGULAR_DATA_START, lt: REGULAR_DATA_END, readAheadBytes: this.readAheadBytes(), fillCache: true }), token, bornMs: now };
  }

  private give(p: Pooled): void {
    if (this.closed || this.idle.length >= POINT_ITERATORS_IDLE_MAX || performance.now() - p.bornMs >= POINT_ITERATOR_AGE_MS) {
      this.end(p);
      return;
    }
    // Oldest first, youngest last: take() reuses the youngest, whose token is the most likely still
    // current. Readers give back in about the order they took, so the place is near the end.
    let at = this.idle.length;
    while (at > 0 && this.idle[at - 1]!.bornMs > p.bornMs) at--;
    this.idle.splice(at, 0, p);
    this.sweepTimer ??= setTimeout(() => this.sweep(), POINT_ITERATOR_AGE_MS).unref();
  }

  /** End idle iterators that got too old (nobody read since): their snapshots pin memory. */
  private sweep(): void {
    this.sweepTimer = undefined;
    const now = performance.now();
    while (this.idle.length > 0 && now - this.idle[0]!.bornMs >= POINT_ITERATOR_AGE_MS) this.end(this.idle.shift()!);
    if (this.idle.length > 0) this.sweepTimer = setTimeout(() => this.sweep(), POINT_ITERATOR_AGE_MS).unref();
  }

  private end(p: Pooled): void {
    p.it.close().catch(() => undefined);
  }

  /** End every idle iterator; later reads go the caller's way. */
  close(): void {
    this.closed = true;
    clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
    for (const p of this.idle.splice(0)) this.end(p);
  }
}
