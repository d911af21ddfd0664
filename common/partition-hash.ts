/**
 * The partition hash of a row and the DocKey bytes a client needs for scan bounds, in common/ so the
 * client (which may not import docdb/) and DocDB compute them with ONE function: docdb/encoding's
 * doc-key.ts re-exports hash16 and partitionHash from here, and a unit test checks that
 * encodeKeyComponents below produces exactly docdb/encoding's ascending component bytes.
 *
 * Hash: 32-bit FNV-1a over the encoded hashed components (tags included), MurmurHash3 fmix32, then
 * folded to 16 bits. Components use the order-preserving ascending encoding of docdb/encoding/
 * primitive.ts (tag byte, then payload); see that file for why each payload looks the way it does.
 */
import { DbError, ErrorCode } from './errors';

/** A key component value (the same union as docdb's Primitive). */
export type KeyValue = null | boolean | bigint | number | string | Uint8Array;

const TAG = { GROUP_END: 0x21, NULL_LOW: 0x24, BYTES: 0x42, DOUBLE: 0x44, FALSE: 0x46, HASH: 0x47, INT64: 0x49, STRING: 0x53, TRUE: 0x54 } as const;
const SIGN64 = 1n << 63n;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

function pushEscaped(out: number[], b: Uint8Array): void {
  for (let i = 0; i < b.length; i++) {
    out.push(b[i]!);
    if (b[i] === 0) out.push(1);
  }
  out.push(0, 0);
}

function isWellFormedUtf16(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d < 0xdc00 || d > 0xdfff) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return false;
    }
  }
  return true;
}

/** Append the ascending encoding of one component. */
export function pushKeyComponent(out: number[], v: KeyValue): void {
  if (v === null) {
    out.push(TAG.NULL_LOW);
    return;
  }
  switch (typeof v) {
    case 'boolean':
      out.push(v ? TAG.TRUE : TAG.FALSE);
      return;
    case 'bigint': {
      if (v < INT64_MIN || v > INT64_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `int64 out of range: ${v}`);
      const u = BigInt.asUintN(64, v) ^ SIGN64;
      // Two 32-bit halves, then plain number bytes: eight BigInt shifts per key were most of a
      // row key's hash (every row a client routes and a tablet checks: docs/rows.md).
      const hi = Number(u >> 32n);
      const lo = Number(u & 0xffff_ffffn);
      out.push(TAG.INT64, hi >>> 24, (hi >>> 16) & 0xff, (hi >>> 8) & 0xff, hi & 0xff, lo >>> 24, (lo >>> 16) & 0xff, (lo >>> 8) & 0xff, lo & 0xff);
      return;
    }
    case 'number': {
      out.push(TAG.DOUBLE);
      const b = Buffer.alloc(8);
      if (Number.isNaN(v)) {
        b[0] = 0xff;
        b[1] = 0xf8;
      } else {
        b.writeDoubleBE(v, 0);
        if (b[0]! & 0x80) for (let i = 0; i < 8; i++) b[i] = ~b[i]! & 0xff;
        else b[0] = b[0]! | 0x80;
      }
      for (const x of b) out.push(x);
      return;
    }
    case 'string':
      if (!isWellFormedUtf16(v)) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'string key component contains a lone surrogate');
      out.push(TAG.STRING);
      pushEscaped(out, Buffer.from(v, 'utf8'));
      return;
    default:
      out.push(TAG.BYTES);
      pushEscaped(out, v);
  }
}

export function encodeKeyComponents(values: readonly KeyValue[]): Uint8Array {
  const out: number[] = [];
  for (const v of values) pushKeyComponent(out, v);
  return Uint8Array.from(out);
}

const FNV32_OFFSET = 0x811c9dc5;
const FNV32_PRIME = 0x01000193;

/** 16-bit hash of raw bytes (FNV-1a 32, fmix32, fold). */
export function hash16(bytes: Uint8Array, from = 0, to = bytes.length): number {
  let h = FNV32_OFFSET;
  for (let i = from; i < to; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, FNV32_PRIME);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return ((h >>> 16) ^ (h & 0xffff)) >>> 0;
}

/** The partition hash of a row's hashed components; 0 for a table without hash columns. */
export function partitionHash(hashed: readonly KeyValue[]): number {
  if (hashed.length === 0) return 0;
  return hash16(encodeKeyComponents(hashed));
}

/**
 * Bytes of a DocKey (ascending range components): 'G' + u16 BE hash + hashed + '!' + range + '!',
 * or range + '!' without hash columns. `range` may be a prefix of the range columns (a scan bound).
 */
export function encodeDocKeyBytes(hash: number, hashed: readonly KeyValue[], range: readonly KeyValue[], opts: { closeRange?: boolean } = {}): Uint8Array {
  const out: number[] = [];
  if (hashed.length > 0) {
    out.push(TAG.HASH, (hash >> 8) & 0xff, hash & 0xff);
    for (const v of hashed) pushKeyComponent(out, v);
    out.push(TAG.GROUP_END);
  }
  for (const v of range) pushKeyComponent(out, v);
  if (opts.closeRange !== false) out.push(TAG.GROUP_END);
  return Uint8Array.from(out);
}

/** 'G' + u16 BE: the first bytes of every DocKey with this hash (65536 gives 'H', past them all). */
export function hashPrefixBytes(hash: number): Uint8Array {
  if (hash >= 65536) return Uint8Array.of(TAG.HASH + 1);
  return Uint8Array.of(TAG.HASH, (hash >> 8) & 0xff, hash & 0xff);
}
