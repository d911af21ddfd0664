/**
 * Upper bounds on the hybrid time of the newest version stored under each row of a RegularDB, so a
 * transaction's write-write check ("is there a committed version of this row newer than my read
 * time?") can skip the RocksDB iterator (three thread-pool hops) when the bound says no.
 *
 * Exactness: the bound of a row is never below the hybrid time of any version stored under it.
 *  - Every RegularDB write goes through FrontierDb.write, which calls prepare() with the batch BEFORE
 *    the engine write: bounds rise before the versions can be read.
 *  - Rows not in the map are bounded by `floor`: the largest bound ever evicted (the map keeps at most
 *    ROWS_MAX rows), or, after open, the newest version time of the whole database, which every batch
 *    that raises it persists under MAX_VERSION_HT_KEY in the same atomic batch (so restarts and remote
 *    bootstrap copies carry it). A database without that key but with data (written before it
 *    existed) gets floor = "unknown": every check walks the engine, as before.
 * Deletes (GC, tombstones are puts) only make a bound conservative.
 */
import type { HybridTime } from '../common/hybrid-time';
import * as enc from './encoding';
import type { KvOp } from './kv-engine';
import { docKeyLength, REGULAR_DATA_START } from './storage-keys';

/** Meta key of RegularDB: the newest hybrid time of any version ever written (16 bytes, see encodeHt). */
export const MAX_VERSION_HT_KEY = Buffer.from([0x01, 0x48]); // "\x01H"
/** Rows whose own bound is kept (~100 bytes each, per RegularDB); beyond, the oldest-raised rows fold into the floor. */
export const VERSION_BOUND_ROWS_MAX = 10_000;
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

export class VersionBounds {
  private readonly rows = new Map<string, HybridTime>();
  /** Bound of every row not in `rows`. */
  private floor: HybridTime;
  /** Bound of every row (persisted when it rises). */
  private max: HybridTime;

  constructor(
    floor: HybridTime,
    private readonly rowsMax = VERSION_BOUND_ROWS_MAX,
  ) {
    this.floor = floor;
    this.max = floor;
  }

  /** Bound of the row whose encoded DocKey is `docKey`. */
  bound(docKey: Buffer): HybridTime {
    return this.rows.get(docKey.toString('latin1')) ?? this.floor;
  }

  stats(): { rows: number; floor: HybridTime; max: HybridTime } {
    return { rows: this.rows.size, floor: this.floor, max: this.max };
  }

  /**
   * Called with a batch before it is written: raises the bounds of the rows it writes versions of,
   * and appends the persisted maximum to the batch when it rises.
   */
  prepare(ops: KvOp[]): void {
    let newMax = this.max;
    const n = ops.length;
    for (let i = 0; i < n; i++) {
      const op = ops[i]!;
      if (op.type !== 'put') continue;
      const k = Buffer.isBuffer(op.key) ? op.key : Buffer.from(op.key.buffer, op.key.byteOffset, op.key.byteLength);
      if (k.length === 0 || k[0]! < REGULAR_DATA_START[0]!) continue; // meta keys (frontier, apply states)
      const ht = enc.decodeDocHybridTimeFromEnd(k).ht;
      const row = k.toString('latin1', 0, docKeyLength(k));
      const cur = this.rows.get(row) ?? this.floor;
      if (ht > cur) {
        // Re-insert: the map's order is the order of last raise (eviction takes the oldest).
        this.rows.delete(row);
        this.rows.set(row, ht);
      }
      if (ht > newMax) newMax = ht;
    }
    while (this.rows.size > this.rowsMax) {
      const [row, ht] = this.rows.entries().next().value!;
      this.rows.delete(row);
      if (ht > this.floor) this.floor = ht;
    }
    if (newMax > this.max && this.max !== HT_UNKNOWN) {
      this.max = newMax;
      ops.push({ type: 'put', key: MAX_VERSION_HT_KEY, value: encodeHt(newMax) });
    }
  }
}
