/**
 * Upper bounds on the hybrid time of the newest version stored under each row of a RegularDB, so a
 * transaction's write-write check ("is there a committed version of this row newer than my read
 * time?") can skip the RocksDB iterator (three thread-pool hops) when the bound says no.
 *
 * The bounds live in a fixed table of hash buckets (a max-sketch): a row's bound is the bucket its
 * encoded DocKey hashes to, and a write raises that bucket to the version's hybrid time. Rows sharing
 * a bucket share the largest of their bounds, which is only conservative (a needless walk, never a
 * missed conflict). No strings, no map, no eviction: a write costs one hash of the DocKey bytes.
 *
 * Exactness: the bound of a row is never below the hybrid time of any version stored under it.
 *  - Every RegularDB write goes through FrontierDb.write, which calls prepare() with the batch BEFORE
 *    the engine write: bounds rise before the versions can be read.
 *  - At open every bucket starts at the newest version time of the whole database, which every batch
 *    that raises it persists under MAX_VERSION_HT_KEY in the same atomic batch (so restarts and remote
 *    bootstrap copies carry it). A database without that key but with data (written before it
 *    existed) starts every bucket at "unknown" (above every time, so never raised): every check
 *    walks the engine, as before.
 * Deletes (GC, tombstones are puts) only make a bound conservative.
 *
 * The same batches keep a lower bound of every version's hybrid time (`min`): "none yet" (above every
 * time) while nothing was written, lowered by every batch that writes an older version and persisted
 * under MIN_VERSION_HT_KEY in that batch; "unknown" (0) for data written before the key existed.
 * History GC uses it: a pass whose cutoff is below it can collect nothing (see TabletPeer.historyGc).
 */
import type { HybridTime } from '../common/hybrid-time';
import * as enc from './encoding';
import type { KvOp } from './kv-engine';
import { docKeyLength, REGULAR_DATA_START } from './storage-keys';

/** Meta key of RegularDB: the newest hybrid time of any version ever written (8 bytes, see encodeHt). */
export const MAX_VERSION_HT_KEY = Buffer.from([0x01, 0x48]); // "\x01H"
/** Meta key of RegularDB: a lower bound of the hybrid time of every version ever written (8 bytes). */
export const MIN_VERSION_HT_KEY = Buffer.from([0x01, 0x4c]); // "\x01L"
/** Hash buckets per RegularDB (8 bytes each: 128 KiB). A power of two. */
export const VERSION_BOUND_BUCKETS = 1 << 14;
/** A bound above every hybrid time: "unknown, walk the engine". */
export const HT_UNKNOWN: HybridTime = (1n << 64n) - 1n;

export function encodeHt(ht: HybridTime): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(ht);
  return b;
}

export function decodeHt(b: Uint8Array): HybridTime {
  if (b.byteLength !== 8) return HT_UNKNOWN;
  return Buffer.from(b.buffer, b.byteOffset, 8).readBigUInt64BE(0);
}

/** FNV-1a over buf[0, end). */
function hashBytes(buf: Buffer, end: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < end; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
  return h >>> 0;
}

/** Do `a` and `b` hold the same 8 hybrid-time bytes after their '#' (at `aAt`, `bAt`)? */
function sameTime(a: Buffer, aAt: number, b: Buffer, bAt: number): boolean {
  if (aAt < 0 || bAt < 0) return false;
  for (let j = 1; j <= 8; j++) if (a[aAt + j] !== b[bAt + j]) return false;
  return true;
}

export class VersionBounds {
  private readonly buckets: BigUint64Array;
  private readonly mask: number;
  /** Bound every bucket started from (the persisted maximum at open). */
  private readonly floor: HybridTime;
  /** Bound of every row (persisted when it rises). */
  private max: HybridTime;
  /** Lower bound of every version's time (persisted when it falls): HT_UNKNOWN none yet, 0 unknown. */
  private min: HybridTime;

  /** `min`: the persisted lower bound; HT_UNKNOWN for an empty database, 0 when unknown. */
  constructor(floor: HybridTime, buckets = VERSION_BOUND_BUCKETS, min: HybridTime = 0n) {
    if (buckets < 1 || (buckets & (buckets - 1)) !== 0) throw new RangeError(`version bound buckets must be a power of two, got ${buckets}`);
    this.buckets = new BigUint64Array(buckets).fill(floor);
    this.mask = buckets - 1;
    this.floor = floor;
    this.max = floor;
    this.min = min;
  }

  /** Lower bound of every version's time: HT_UNKNOWN while none was written, 0 when unknown. */
  get oldest(): HybridTime {
    return this.min;
  }

  /** Bound of the row whose encoded DocKey is `docKey`. */
  bound(docKey: Buffer): HybridTime {
    return this.buckets[hashBytes(docKey, docKey.length) & this.mask]!;
  }

  stats(): { buckets: number; raised: number; floor: HybridTime; max: HybridTime; min: HybridTime } {
    let raised = 0;
    for (const b of this.buckets) if (b !== this.floor) raised++;
    return { buckets: this.buckets.length, raised, floor: this.floor, max: this.max, min: this.min };
  }

  /**
   * Called with a batch before it is written: raises the bounds of the rows it writes versions of,
   * and appends the persisted maximum to the batch when it rises (the minimum when it falls).
   */
  prepare(ops: KvOp[]): void {
    let newMax = this.max;
    let newMin = this.min;
    const n = ops.length;
    const buckets = this.buckets;
    // Consecutive puts of one row (its liveness and columns) share the DocKey, and the puts of one
    // write share the hybrid time: each is hashed / decoded once per run, not once per put (this loop
    // was ~9 % of a replica's CPU applying mutateRows batches, bench/results/2026-12-07-rows-3.md).
    let prevKey: Buffer | undefined;
    let prevDocKeyLen = 0;
    let prevBucket = 0;
    let prevHt: HybridTime = 0n;
    let prevTimeAt = -1;
    for (let i = 0; i < n; i++) {
      const op = ops[i]!;
      if (op.type !== 'put') continue;
      const k = Buffer.isBuffer(op.key) ? op.key : Buffer.from(op.key.buffer, op.key.byteOffset, op.key.byteLength);
      if (k.length === 0 || k[0]! < REGULAR_DATA_START[0]!) continue; // meta keys (frontier, apply states)
      // DocKey encodings are prefix-free: a key that starts with the previous put's whole DocKey has that DocKey.
      const sameRow = prevKey !== undefined && k.length > prevDocKeyLen && k.compare(prevKey, 0, prevDocKeyLen, 0, prevDocKeyLen) === 0;
      const timeAt = enc.docHybridTimeStart(k);
      const ht = prevKey !== undefined && sameTime(k, timeAt, prevKey, prevTimeAt) ? prevHt : enc.decodeDocHybridTimeFromEnd(k).ht;
      if (!sameRow) {
        prevDocKeyLen = docKeyLength(k);
        prevBucket = hashBytes(k, prevDocKeyLen) & this.mask;
      }
      prevKey = k;
      prevTimeAt = timeAt;
      prevHt = ht;
      const b = prevBucket;
      if (ht > buckets[b]!) buckets[b] = ht;
      if (ht > newMax) newMax = ht;
      if (ht < newMin) newMin = ht;
    }
    if (newMax > this.max && this.max !== HT_UNKNOWN) {
      this.max = newMax;
      ops.push({ type: 'put', key: MAX_VERSION_HT_KEY, value: encodeHt(newMax) });
    }
    if (newMin < this.min) {
      this.min = newMin;
      ops.push({ type: 'put', key: MIN_VERSION_HT_KEY, value: encodeHt(newMin) });
    }
  }
}
