/**
 * Row key filters (HBase PrefixFilter, RowRange/MultiRowRangeFilter, FuzzyRowFilter) on the encoded
 * DocKey. compile.ts turns the user's values of the leading key column into byte bounds with the
 * key encoding (order-preserving and prefix-free, docdb/encoding/primitive.ts), so "the leading key
 * value is in [a, b)" is "the DocKey bytes are in [enc(a), enc(b))" and a failing row can seek.
 *
 * A table with hash columns keeps rows in hash order: its leading key column starts after the
 * 'G' + u16 hash prefix (`offset` 3) and rows are not in key order, so these filters still match
 * there but cannot seek or end the scan (`seekable` false: NEXT_ROW instead).
 */
import { BaseFilter, ReturnCode, type FilterRow } from './evaluator';

export interface RowKeyShape {
  /** Bytes of the DocKey before the leading key column's encoding. */
  offset: number;
  /** Rows are in the order of the leading column's encoding (no hash prefix). */
  seekable: boolean;
}

/** An encoded key interval [lo, hi) of the leading column (hi undefined: open). */
export interface ByteRange {
  lo: Buffer;
  hi: Buffer | undefined;
}

function tail(key: Buffer, shape: RowKeyShape): Buffer {
  return key.subarray(shape.offset);
}

export class PrefixRowFilter extends BaseFilter {
  constructor(
    private readonly prefix: Buffer,
    private readonly shape: RowKeyShape,
  ) {
    super();
  }
  override startRow(row: FilterRow): ReturnCode {
    const k = tail(row.key, this.shape);
    const c = Buffer.compare(k.subarray(0, this.prefix.length), this.prefix);
    if (c === 0) return ReturnCode.INCLUDE;
    if (!this.shape.seekable) return ReturnCode.NEXT_ROW;
    return c < 0 ? this.seek({ row: this.prefix }) : ReturnCode.DONE;
  }
}

/**
 * One or several ranges (MultiRowRangeFilter); compile() sorts and merges them, so the first range
 * whose upper end lies above the key is the only one that can hold it or the next row.
 */
export class RangeRowFilter extends BaseFilter {
  constructor(
    private readonly ranges: readonly ByteRange[],
    private readonly shape: RowKeyShape,
  ) {
    super();
  }
  override startRow(row: FilterRow): ReturnCode {
    const k = tail(row.key, this.shape);
    for (const r of this.ranges) {
      if (r.hi !== undefined && Buffer.compare(k, r.hi) >= 0) continue;
      if (Buffer.compare(k, r.lo) >= 0) return ReturnCode.INCLUDE;
      return this.shape.seekable ? this.seek({ row: r.lo }) : ReturnCode.NEXT_ROW;
    }
    return this.shape.seekable ? ReturnCode.DONE : ReturnCode.NEXT_ROW;
  }
}

/** Sort ranges by lower end and merge overlapping or touching ones; drop empty ones. */
export function mergeRanges(ranges: readonly ByteRange[]): ByteRange[] {
  const sorted = ranges.filter((r) => r.hi === undefined || Buffer.compare(r.lo, r.hi) < 0).sort((a, b) => Buffer.compare(a.lo, b.lo));
  const out: ByteRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && (last.hi === undefined || Buffer.compare(r.lo, last.hi) <= 0)) {
      if (last.hi !== undefined && (r.hi === undefined || Buffer.compare(r.hi, last.hi) > 0)) last.hi = r.hi;
    } else out.push({ lo: r.lo, hi: r.hi });
  }
  return out;
}

/**
 * A fuzzy pattern on the encoded key: `bytes[i]` must equal the key byte at i unless `any[i]`; a
 * wildcard matches any byte but 0x00, which in a string's encoding only starts its terminator (or
 * the escape of a NUL character) — so '?' never matches past the end of a shorter string.
 */
export interface FuzzyPattern {
  bytes: Buffer;
  any: readonly boolean[];
}

const WILD_LOW = 0x01;

function allowed(p: FuzzyPattern, i: number, b: number): boolean {
  return p.any[i] ? b >= WILD_LOW : b === p.bytes[i];
}

/** Does `k` match the pattern on its first bytes? */
export function fuzzyMatches(k: Buffer, p: FuzzyPattern): boolean {
  if (k.length < p.bytes.length) return false;
  for (let i = 0; i < p.bytes.length; i++) if (!allowed(p, i, k[i]!)) return false;
  return true;
}

/**
 * The smallest byte string above `k` that matches `p` (undefined: none does). Walk the key to the
 * first byte the pattern rejects (or the key's end): below the lowest byte allowed there → take that
 * lowest byte; above it → carry into the last wildcard before it that can still grow; either way the
 * rest is the pattern at its lowest (fixed bytes, wildcards at 0x01).
 */
export function fuzzyNext(k: Buffer, p: FuzzyPattern): Buffer | undefined {
  const n = p.bytes.length;
  const low = (j: number): number => (p.any[j] ? WILD_LOW : p.bytes[j]!);
  const build = (prefixLen: number, at: number, b: number): Buffer => {
    const out = Buffer.alloc(n);
    k.copy(out, 0, 0, prefixLen);
    out[at] = b;
    for (let j = at + 1; j < n; j++) out[j] = low(j);
    return out;
  };
  for (let i = 0; i < n; i++) {
    if (i >= k.length) return build(i, i, low(i));
    if (allowed(p, i, k[i]!)) continue;
    if (k[i]! < low(i)) return build(i, i, low(i));
    for (let j = i - 1; j >= 0; j--) if (p.any[j] && k[j]! < 0xff) return build(j, j, k[j]! + 1);
    return undefined;
  }
  return undefined; // k matches: not asked for
}

export class FuzzyRowFilter extends BaseFilter {
  constructor(
    private readonly patterns: readonly FuzzyPattern[],
    private readonly shape: RowKeyShape,
  ) {
    super();
  }
  override startRow(row: FilterRow): ReturnCode {
    const k = tail(row.key, this.shape);
    if (this.patterns.some((p) => fuzzyMatches(k, p))) return ReturnCode.INCLUDE;
    if (!this.shape.seekable) return ReturnCode.NEXT_ROW;
    let best: Buffer | undefined;
    for (const p of this.patterns) {
      const c = fuzzyNext(k, p);
      if (c !== undefined && (best === undefined || Buffer.compare(c, best) < 0)) best = c;
    }
    return best === undefined ? ReturnCode.DONE : this.seek({ row: best });
  }
}
