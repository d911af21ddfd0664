/**
 * Row cache of one RegularDB: for a DocKey, every committed version stored under it (parsed), so a
 * point read that finds it assembles the row without a RocksDB iterator — two thread-pool hops
 * (iterator next + end) saved, the largest share of a point read's server CPU in the profile.
 * (RocksDB's own row_cache still needs those hops; this one lives on the JS side.)
 *
 * Invariant: a cached entry holds the versions an iterator over the row's range would return now.
 *  - Every write to the RegularDB goes through FrontierDb.write, which calls beginWrite() before the
 *    engine write and endWrite() after it (also on failure). endWrite writes the new versions
 *    THROUGH into the written rows' cached entries (a put adds its parsed version, replacing one
 *    with the same key); what it cannot apply exactly drops the row (a version delete: history GC)
 *    or the whole cache (a range delete, a key it cannot place, a batch over ROW_OPS_TRACKED_MAX).
 *    A read-modify-write's next read of its row (an increment's) then hits.
 *  - A reader fills a row only if no write of THAT row began since it took its token (before
 *    opening its iterator) and none is in flight: a version it could have missed would otherwise
 *    stay cached. Writes of other rows do not stop it (per-row write generations), so fills happen
 *    under a steady write load too; a write that cannot be placed by row stops every fill.
 * Reads at any read time use the entry (it holds every version, like the iterator), so MVCC reads,
 * read restarts and TTL behave as without it. The owner bypasses the cache whenever IntentsDB holds
 * intents (they are merged by the iterator path).
 *
 * Untracked writes. Placing a write row by row (a hex DocKey per row, two maps) is only of use to
 * readers: with no cached row to write through and no token taken for ROW_CACHE_TRACK_IDLE_MS (a
 * follower, or a leader nobody reads from), a write is not placed. It is handled as a write that
 * cannot be placed, without the clear: every token taken before it dies (the floor) and none is
 * handed out while it is in flight, so no reader fills what it may have missed. The next reader's
 * token turns tracking back on for later writes (docs/rows.md, "Rows that are read-modify-written
 * stay cached").
 */
import { OldestKeys } from '../common/oldest-keys';
import type { DocKey } from './doc-db-api';
import type { KvOp } from './kv-engine';
import type { CellVersion } from './row-assembler';
import { decodeStored, docKeyLength, parseRegularKey, REGULAR_DATA_END, REGULAR_DATA_START } from './storage-keys';

/** Ops of one write placed row by row; a larger write clears the cache and stops fills while in flight. */
const ROW_OPS_TRACKED_MAX = 4096;
/** Rows whose last write generation is remembered; past it the map restarts (older tokens refused). */
const LAST_WRITE_ROWS_MAX = 8192;
/** Bytes charged per cached version beyond its value (keys, objects). */
const VERSION_OVERHEAD_BYTES = 96;
/** With no cached row and no token taken for this long, writes are not placed row by row (see the file comment). */
export const ROW_CACHE_TRACK_IDLE_MS = 2000;

export interface CachedRow {
  key: DocKey;
  versions: CellVersion[];
  bytes: number;
}

/**
 * Per op of a write, the hex DocKey of its row (undefined: a meta key); undefined as a whole: not
 * placeable; UNTRACKED: not placed on purpose (nobody could use it, see the file comment).
 */
type PlacedOps = Array<string | undefined> | undefined | typeof UNTRACKED;
const UNTRACKED = 'untracked';

function opKey(k: Uint8Array): Buffer {
  return Buffer.isBuffer(k) ? k : Buffer.from(k.buffer, k.byteOffset, k.byteLength);
}

/** The row of every op, or undefined when one cannot be placed (range delete, unparsable key, too many). */
function placeOps(ops: readonly KvOp[]): PlacedOps {
  if (ops.length > ROW_OPS_TRACKED_MAX) return undefined;
  const out: Array<string | undefined> = [];
  let prev: Buffer | undefined;
  let prevHex = '';
  for (const op of ops) {
    if (op.type === 'delRange') return undefined;
    const k = opKey(op.key);
    if (k.length === 0 || k[0]! < REGULAR_DATA_START[0]! || k[0]! >= REGULAR_DATA_END[0]!) {
      out.push(undefined); // meta keys (frontier, history floor, apply states)
      continue;
    }
    // Consecutive ops of one row (its liveness and columns) share the previous op's DocKey.
    if (prev && k.length > prev.length && k.subarray(0, prev.length).equals(prev) && docKeyLengthSafe(k) === prev.length) {
      out.push(prevHex);
      continue;
    }
    const len = docKeyLengthSafe(k);
    if (len === undefined) return undefined;
    prev = k.subarray(0, len);
    prevHex = prev.toString('hex');
    out.push(prevHex);
  }
  return out;
}

function docKeyLengthSafe(k: Buffer): number | undefined {
  try {
    return docKeyLength(k);
  } catch {
    return undefined;
  }
}

export class RowCache {
  private readonly rows = new Map<string, CachedRow>();
  private readonly oldest = new OldestKeys(this.rows);
  private bytes = 0;
  private generation = 0;
  /** Tokens below it are refused: a write that could not be placed by row, or lastWrite restarted. */
  private floor = 0;
  /** Writes in flight that could not be placed by row: nobody fills. */
  private unplacedInflight = 0;
  /** Rows being written now, with how many writes of each. */
  private readonly inflightRows = new Map<string, number>();
  /** Per row, the generation of its last write's begin or end. */
  private readonly lastWrite = new Map<string, number>();
  /** Each in-flight write's placement, computed once at beginWrite (FrontierDb passes the same array to both). */
  private readonly placed = new WeakMap<readonly KvOp[], PlacedOps>();
  /** When token() was last called (monotonic ms): a reader is around, writes are tracked. */
  private lastTokenMs = Number.NEGATIVE_INFINITY;
  readonly metrics = { hits: 0, misses: 0, fills: 0, skippedFills: 0, evictions: 0, clears: 0, writtenThrough: 0, untrackedWrites: 0 };

  constructor(
    private readonly maxBytes: () => number,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

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

  /** Taken by a reader before it opens its iterator; fill() accepts its result only if still current for the row. */
  token(): number {
    this.lastTokenMs = this.nowMs();
    return this.unplacedInflight > 0 ? -1 : this.generation;
  }

  /**
   * True when no write of the row is in flight and none began or ended since `token` was taken (and
   * no write that could not be placed by row, nor a restart of the per-row generations, came since):
   * what an iterator opened after taking `token` reads of the row is what the RegularDB holds now.
   */
  current(token: number, docKeyHex: string): boolean {
    return token >= this.floor && this.unplacedInflight === 0 && !this.inflightRows.has(docKeyHex) && (this.lastWrite.get(docKeyHex) ?? -1) <= token;
  }

  /** False once no row can be current for `token` any more (see current()). */
  tokenLive(token: number): boolean {
    return token >= this.floor;
  }

  fill(token: number, docKeyHex: string, key: DocKey, versions: CellVersion[]): void {
    if (!this.current(token, docKeyHex)) {
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
    this.evictOverBudget(max);
  }

  /**
   * Before a RegularDB write: readers of its rows that started earlier must not fill. The written
   * rows' entries stay as they are until endWrite: until the write is done nobody may need its
   * versions (a read at or above its hybrid time waits for the apply to finish; a transaction's
   * apply happens while the tablet holds intents, when the cache is not used).
   */
  beginWrite(ops: readonly KvOp[]): void {
    this.generation++;
    const untracked = this.rows.size === 0 && this.nowMs() - this.lastTokenMs > ROW_CACHE_TRACK_IDLE_MS;
    const placed = untracked ? UNTRACKED : placeOps(ops);
    this.placed.set(ops, placed);
    if (placed === UNTRACKED) this.metrics.untrackedWrites++;
    if (placed === undefined || placed === UNTRACKED) {
      this.unplacedInflight++;
      this.floor = this.generation;
      return;
    }
    if (this.lastWrite.size > LAST_WRITE_ROWS_MAX) {
      this.lastWrite.clear();
      this.floor = this.generation;
    }
    for (const hex of new Set(placed)) {
      if (hex === undefined) continue;
      this.inflightRows.set(hex, (this.inflightRows.get(hex) ?? 0) + 1);
      this.lastWrite.set(hex, this.generation);
    }
  }

  /** After the write finished (or failed: `written` false, its rows dropped): its versions written through into cached rows, then fills allowed again. */
  endWrite(ops: readonly KvOp[], written = true): void {
    this.generation++;
    const placed = this.placed.has(ops) ? this.placed.get(ops) : placeOps(ops);
    this.placed.delete(ops);
    if (placed === undefined || placed === UNTRACKED) {
      this.unplacedInflight = Math.max(0, this.unplacedInflight - 1);
      this.floor = this.generation;
      // Nothing was filled while it was in flight (no token); an untracked write began with no row cached.
      if (placed === undefined || this.rows.size > 0) this.clear();
      return;
    }
    const rows = new Set<string>();
    placed.forEach((hex, i) => {
      if (hex === undefined) return;
      rows.add(hex);
      if (written) this.writeThrough(hex, ops[i]!);
      else this.drop(hex);
    });
    for (const hex of rows) {
      const n = (this.inflightRows.get(hex) ?? 1) - 1;
      if (n > 0) this.inflightRows.set(hex, n);
      else this.inflightRows.delete(hex);
      this.lastWrite.set(hex, this.generation);
    }
  }

  clear(): void {
    this.rows.clear();
    this.bytes = 0;
    this.generation++;
    this.floor = this.generation;
    this.metrics.clears++;
  }

  /**
   * One written op into its row's cached entry, if cached: a put adds (or replaces) its version as
   * an iterator would now read it; anything else drops the row.
   */
  private writeThrough(hex: string, op: KvOp): void {
    const r = this.rows.get(hex);
    if (!r) return;
    if (op.type !== 'put') {
      this.drop(hex);
      return;
    }
    let v: CellVersion;
    try {
      const p = parseRegularKey(opKey(op.key), hex.length / 2);
      v = { sub: p.sub, ht: p.ht, writeId: p.writeId, own: false, value: decodeStored(op.value) };
    } catch {
      this.drop(hex);
      return;
    }
    const same = r.versions.findIndex((x) => x.ht === v.ht && x.writeId === v.writeId && sameSub(x, v));
    const added = VERSION_OVERHEAD_BYTES + valueBytes(v);
    if (same >= 0) {
      const old = VERSION_OVERHEAD_BYTES + valueBytes(r.versions[same]!);
      r.versions[same] = v;
      r.bytes += added - old;
      this.bytes += added - old;
    } else {
      r.versions.push(v);
      r.bytes += added;
      this.bytes += added;
    }
    this.metrics.writtenThrough++;
    const max = this.maxBytes();
    if (r.bytes > max / 4) this.drop(hex);
    else this.evictOverBudget(max);
  }

  private evictOverBudget(max: number): void {
    while (this.bytes > max) {
      const oldest = this.oldest.take();
      if (oldest === undefined) break;
      this.drop(oldest);
      this.metrics.evictions++;
    }
  }

  private drop(hex: string): void {
    const r = this.rows.get(hex);
    if (!r) return;
    this.rows.delete(hex);
    this.bytes -= r.bytes;
  }
}

function sameSub(a: CellVersion, b: CellVersion): boolean {
  return a.sub.kind === b.sub.kind && (a.sub.kind !== 'column' || (b.sub.kind === 'column' && a.sub.id === b.sub.id));
}

function valueBytes(v: CellVersion): number {
  if (v.value.type !== 'primitive') return 8;
  if (v.value.utf8 !== undefined) return v.value.utf8.byteLength * 2; // a large string, not decoded yet
  const p = v.value.value;
  if (typeof p === 'string') return p.length * 2;
  if (p instanceof Uint8Array) return p.byteLength;
  return 16;
}
