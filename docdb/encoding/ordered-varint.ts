/**
 * An unsigned varint whose byte order equals numeric order, and which is prefix-free.
 *
 * The count of leading 1 bits of the first byte gives the length (like UTF-8), so a longer encoding
 * always has a larger first byte than a shorter one, and equal-length encodings are big-endian:
 *
 *   0xxxxxxx                              7 bits   < 2^7
 *   10xxxxxx  +1 byte                    14 bits   < 2^14
 *   110xxxxx  +2 bytes                   21 bits   < 2^21
 *   1110xxxx  +3 bytes                   28 bits   < 2^28
 *   11110xxx  +4 bytes                   35 bits   < 2^35
 *
 * Used for column ids and for the write id inside DocHybridTime (which needs 32 + 3 bits).
 */
import type { ByteReader, ByteWriter } from './byte-buffer';
import { assert } from '../../common/assert';

export const ORDERED_VARINT_MAX = 2 ** 35 - 1;

const LIMITS = [2 ** 7, 2 ** 14, 2 ** 21, 2 ** 28, 2 ** 35];
const PREFIX = [0x00, 0x80, 0xc0, 0xe0, 0xf0];

export function orderedVarintLength(v: number): number {
  for (let i = 0; i < LIMITS.length; i++) if (v < LIMITS[i]) return i + 1;
  return -1;
}

export function encodeOrderedVarint(out: ByteWriter, v: number): void {
  // One byte, the value itself (column ids, the liveness column): every cell key of every write has one.
  if (v >= 0 && v < 0x80 && (v | 0) === v) {
    out.u8(v);
    return;
  }
  assert(Number.isInteger(v) && v >= 0 && v <= ORDERED_VARINT_MAX, `ordered varint out of range: ${v}`);
  const n = orderedVarintLength(v);
  out.ensure(n);
  const b = out.raw();
  let at = out.length;
  // High part: whatever does not fit in the trailing (n-1) full bytes, under the length prefix.
  const low = n - 1;
  const high = Math.floor(v / 2 ** (8 * low));
  b[at++] = PREFIX[n - 1] | high;
  for (let i = low - 1; i >= 0; i--) b[at++] = Math.floor(v / 2 ** (8 * i)) & 0xff;
  out.advance(n);
}

export function decodeOrderedVarint(r: ByteReader): number {
  const first = r.u8();
  let n: number;
  if (first < 0x80) n = 1;
  else if (first < 0xc0) n = 2;
  else if (first < 0xe0) n = 3;
  else if (first < 0xf0) n = 4;
  else if (first < 0xf8) n = 5;
  else throw r.corruption(`bad ordered varint first byte 0x${first.toString(16)}`);
  let v = first & ~PREFIX[n - 1] & 0xff;
  r.need(n - 1, 'ordered varint');
  for (let i = 1; i < n; i++) v = v * 256 + r.buf[r.offset++];
  // A value stored longer than needed would break "one value, one encoding" and hence equality.
  if (orderedVarintLength(v) !== n) throw r.corruption(`non-canonical ordered varint (${n} bytes for ${v})`);
  return v;
}
