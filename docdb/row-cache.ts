/**
 * Row cache of one RegularDB: for a DocKey, every committed version stored under it (parsed), so a
 * point read that finds it assembles the row without a RocksDB iterator — two thread-pool hops
 * (iterator next + end) saved, the largest share of a point read's server CPU in the profile.
 * (RocksDB's own row_cache still needs those hops; this one lives on the JS side.)
 *
 * Invariant: a cached entry equals what an iterator over the row's range would return now.
 *  - Every write to the RegularDB goes through FrontierDb.write, which calls beginWrite() before the
 *    engine write (no fills from then on) and endWrite() after it (also on failure), which drops the
 *    written rows' entries (a batch larger than INVALIDATE_KEYS_MAX drops the whole cache).
 *  - A reader fills the cache only when no write began or was in flight since it took its
 *    generation (before opening its iterator): a version it could have missed would otherwise stay
 *    cached.
 * Reads at any read time use the entry (it holds every version, like the iterator), so MVCC reads,
 * read restarts and TTL behave as without it. The owner bypasses the cache whenever IntentsDB holds
 * intents (they are merged by the iterator path).
 */
import { OldestKeys } from '../common/oldest-keys';
import type { DocKey } from './doc-db-api';
import type { KvOp } from './kv-engine';
import type { CellVersion } from './row-assembler';
import { docKeyLength, REGULAR_DATA_START } from './storage-keys';

/** Rows invalidated one by one per write batch; a larger batch clears the cache. */
const INVALIDATE_KEYS_MAX = 256;
/** Bytes charged per cached version beyond its value (keys, objects). */
const VERSION_OVERHEAD_BYTES = 96;

export interface CachedRow {
  key: DocKey;
  versions: CellVersion[];
  bytes: number;
}

export class RowCache {
  private readonly rows = new Map<string, CachedRow>();
  private readonly oldest = new OldestKeys(this.rows);
  private bytes = 0;
  private generation = 0;
  private inflight = 0;
  readonly metrics = { hits: 0, misses: 0, fills: 0, skippedFills: 0, evictions: 0, clears: 0 };

  constructor(private readonly maxBytes: () => number) {}

  get enabled(): boolean {
    return this.maxBytes() > 0;
  }

  get size(): number {
    return this.rows.size;
  }

  get usedBytes(): number {
    return this.bytes;
  }

  get(docKeyHex: string): CachedRow | undefined {
    const r = this.rows.get(docKeyHex);
    if (r) this.metrics.hits++;
    else this.metrics.misses++;
    return r;
  }

  /** Taken by a reader before it opens its iterator; fill() accepts its result only if still current. */
  token(): number {
    return this.inflight > 0 ? -1 : this.generation;
  }

  fill(token: number, docKeyHex: string, key: DocKey, versions: CellVersion[]): void {
    if (token < 0 || token !== this.generation || this.inflight > 0) {
      this.metrics.skippedFills++;
      return;
    }
    const max = this.maxBytes();
    let bytes = 0;
    for (const v of versions) bytes += VERSION_OVERHEAD_BYTES + valueBytes(v);
    if (max <= 0 || bytes > max / 4) return;
    this.drop(docKeyHex);
    this.rows.set(docKeyHex, { key, versions, bytes });
    this.bytes += bytes;
    this.metrics.fills++;
    while (this.bytes > max) {
      const oldest = this.oldest.take();
      if (oldest === undefined) break;
      this.drop(oldest);
      this.metrics.evictions++;
    }
  }

  /**
   * Before a RegularDB write: readers that started earlier must not fill. The written rows stay
   * until endWrite drops them: until the write is done nobody may need its versions (a read at or
   * above its hybrid time waits for the apply to finish; a transaction's apply happens while the
   * tablet holds intents, when the cache is not used), so dropping them once is enough.
   */
  beginWrite(_ops: readonly KvOp[]): void {
    this.generation++;
    this.inflight++;
  }

  /** After the write finished (or failed): drop the written rows again, then allow fills. */
  endWrite(ops: readonly KvOp[]): void {
    this.generation++;
    this.invalidate(ops);
    this.inflight--;
  }

  clear(): void {
    this.rows.clear();
    this.bytes = 0;
    this.generation++;
    this.metrics.clears++;
  }

  private invalidate(ops: readonly KvOp[]): void {
    if (this.rows.size === 0) return;
    if (ops.length > INVALIDATE_KEYS_MAX) {
      this.clear();
      return;
    }
    for (const op of ops) {
      if (op.type === 'delRange') {
        this.clear();
        return;
      }
      const k = Buffer.isBuffer(op.key) ? op.key : Buffer.from(op.key.buffer, op.key.byteOffset, op.key.byteLength);
      if (k.length === 0 || k[0]! < REGULAR_DATA_START[0]!) continue; // meta keys (frontier, apply states)
      let len: number;
      try {
        len = docKeyLength(k);
      } catch {
        this.clear(); // not a row key we can place: be safe
        return;
      }
      this.drop(k.subarray(0, len).toString('hex'));
    }
  }

  private drop(hex: string): void {
    const r = this.rows.get(hex);
    if (!r) return;
    this.rows.delete(hex);
    this.bytes -= r.bytes;
  }
}

function valueBytes(v: CellVersion): number {
  if (v.value.type !== 'primitive') return 8;
  const p = v.value.value;
  if (typeof p === 'string') return p.length * 2;
  if (p instanceof Uint8Array) return p.byteLength;
  return 16;
}
