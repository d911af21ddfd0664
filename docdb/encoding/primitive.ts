/**
 * Order-preserving encoding of one key component: a tag byte, then a payload whose bytes compare
 * (memcmp) exactly as the values compare logically (`comparePrimitives`). Every encoding is
 * prefix-free, so components can be concatenated and the concatenation still sorts component by
 * component.
 *
 *   null     tag only ('$' ascending, 'v' descending)
 *   bool     tag only ('F'/'T' ascending, 'c'/'U' descending)
 *   int64    8 bytes big-endian two's complement with the sign bit flipped (negatives first)
 *   double   8 bytes IEEE-754 big-endian; positive: sign bit set; negative: all bits complemented.
 *            So -Inf < ... < -0 < +0 < ... < +Inf < NaN. Every NaN is stored as the one canonical
 *            quiet NaN (NaN payloads are not kept) and sorts after +Inf, like PostgreSQL's NaN.
 *   string   UTF-8; 0x00 escaped as 0x00 0x01; terminated by 0x00 0x00. A string sorts before its
 *            extensions, and order is Unicode code point order (= UTF-8 byte order, which differs from
 *            JavaScript's UTF-16 `<` for characters above U+FFFF). Strings must be well-formed
 *            UTF-16: a lone surrogate has no UTF-8 form and is rejected.
 *   bytes    the same escaping as strings.
 *
 * Descending variants use their own tag and complement every payload byte (terminator and escapes
 * included), which reverses the order of prefix-free encodings.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Primitive } from './types';
import { ByteReader, ByteWriter } from './byte-buffer';
import { Tag } from './tags';

const SIGN64 = 1n << 63n;
const MASK64 = (1n << 64n) - 1n;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/** Cross-type rank = the ascending tag byte, so comparePrimitives agrees with the byte order. */
export function primitiveTag(v: Primitive, descending = false): number {
  if (v === null) return descending ? Tag.NULL_HIGH : Tag.NULL_LOW;
  switch (typeof v) {
    case 'boolean':
      return v ? (descending ? Tag.TRUE_DESC : Tag.TRUE) : descending ? Tag.FALSE_DESC : Tag.FALSE;
    case 'bigint':
      return descending ? Tag.INT64_DESC : Tag.INT64;
    case 'number':
      return descending ? Tag.DOUBLE_DESC : Tag.DOUBLE;
    case 'string':
      return descending ? Tag.STRING_DESC : Tag.STRING;
    default:
      return descending ? Tag.BYTES_DESC : Tag.BYTES;
  }
}

export function encodePrimitive(out: ByteWriter, v: Primitive, descending = false): void {
  out.u8(primitiveTag(v, descending));
  if (v === null || typeof v === 'boolean') return;
  const start = out.length;
  if (typeof v === 'bigint') {
    if (v < INT64_MIN || v > INT64_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `int64 out of range: ${v}`);
    out.u64BE(BigInt.asUintN(64, v) ^ SIGN64);
  } else if (typeof v === 'number') {
    encodeDoubleAscending(out, v);
  } else if (typeof v === 'string') {
    encodeStringBody(out, v);
  } else {
    encodeEscaped(out, v);
  }
  if (descending) out.complementFrom(start);
}

function encodeDoubleAscending(out: ByteWriter, v: number): void {
  out.ensure(8);
  const b = out.raw();
  const at = out.length;
  if (Number.isNaN(v)) {
    // Canonical quiet NaN 0x7FF8000000000000 with the positive-sign transform applied.
    b[at] = 0xff;
    b[at + 1] = 0xf8;
    b.fill(0, at + 2, at + 8);
  } else {
    b.writeDoubleBE(v, at);
    if (b[at] & 0x80) {
      for (let i = at; i < at + 8; i++) b[i] = ~b[i] & 0xff;
    } else {
      b[at] |= 0x80;
    }
  }
  out.advance(8);
}

function encodeStringBody(out: ByteWriter, s: string): void {
  // Fast path: write UTF-8 in place (at most 3 bytes per UTF-16 unit), then escape only if a NUL
  // appeared, which keys rarely contain.
  out.ensure(s.length * 3 + 2);
  const b = out.raw();
  const at = out.length;
  const n = b.write(s, at, 'utf8');
  let hasNul = false;
  for (let i = at; i < at + n; i++) {
    if (b[i] === 0) {
      hasNul = true;
      break;
    }
  }
  if (hasNul) {
    encodeEscaped(out, Buffer.from(b.subarray(at, at + n)));
  } else {
    b[at + n] = 0;
    b[at + n + 1] = 0;
    out.advance(n + 2);
  }
  // Buffer.write silently replaces a lone surrogate with U+FFFD; detect that rather than store a
  // value that would not decode back to itself. Only strings that can hold surrogates pay the check.
  if (n !== s.length && !isWellFormedUtf16(s)) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, 'string key component contains a lone surrogate');
  }
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

/** Bytes with 0x00 → 0x00 0x01, then the 0x00 0x00 terminator. */
function encodeEscaped(out: ByteWriter, v: Uint8Array): void {
  let zeros = 0;
  for (let i = 0; i < v.length; i++) if (v[i] === 0) zeros++;
  out.ensure(v.length + zeros + 2);
  const b = out.raw();
  let at = out.length;
  if (zeros === 0) {
    b.set(v, at);
    at += v.length;
  } else {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      b[at++] = x;
      if (x === 0) b[at++] = 1;
    }
  }
  b[at++] = 0;
  b[at++] = 0;
  out.advance(at - out.length);
}

/**
 * Decode one component. `descending` states the expected direction; when undefined either is
 * accepted (the tag says which).
 */
export function decodePrimitive(r: ByteReader, descending?: boolean): Primitive {
  const tag = r.u8();
  const desc = isDescendingTag(tag);
  if (desc === undefined) throw r.corruption(`unknown primitive tag 0x${tag.toString(16)}`);
  if (descending !== undefined && desc !== descending) {
    throw r.corruption(`expected a ${descending ? 'descending' : 'ascending'} component, found tag 0x${tag.toString(16)}`);
  }
  const flip = desc ? 0xff : 0;
  switch (tag) {
    case Tag.NULL_LOW:
    case Tag.NULL_HIGH:
      return null;
    case Tag.FALSE:
    case Tag.FALSE_DESC:
      return false;
    case Tag.TRUE:
    case Tag.TRUE_DESC:
      return true;
    case Tag.INT64:
    case Tag.INT64_DESC: {
      let u = r.u64BE();
      if (desc) u = ~u & MASK64;
      return BigInt.asIntN(64, u ^ SIGN64);
    }
    case Tag.DOUBLE:
    case Tag.DOUBLE_DESC:
      return decodeDouble(r, flip);
    case Tag.STRING:
    case Tag.STRING_DESC:
      return decodeEscaped(r, flip).toString('utf8');
    default:
      return new Uint8Array(decodeEscaped(r, flip));
  }
}

/**
 * Step over one encoded component without materialising it (key-length scans on hot paths).
 * Validates as much as decoding would need to find the end: tag, payload length, terminator.
 */
export function skipPrimitive(r: ByteReader): void {
  const tag = r.u8();
  switch (tag) {
    case Tag.NULL_LOW:
    case Tag.NULL_HIGH:
    case Tag.FALSE:
    case Tag.FALSE_DESC:
    case Tag.TRUE:
    case Tag.TRUE_DESC:
      return;
    case Tag.INT64:
    case Tag.INT64_DESC:
    case Tag.DOUBLE:
    case Tag.DOUBLE_DESC:
      r.need(8, 'fixed-width component');
      r.offset += 8;
      return;
    case Tag.STRING:
    case Tag.BYTES:
    case Tag.STRING_DESC:
    case Tag.BYTES_DESC: {
      const flip = tag === Tag.STRING_DESC || tag === Tag.BYTES_DESC ? 0xff : 0;
      const b = r.buf;
      // indexOf finds the next (possibly complemented) zero byte natively; each hit is either an
      // escape (skip it) or the terminator. Bounded: every iteration advances by at least 2.
      let i = r.offset;
      for (;;) {
        const z = b.indexOf(flip, i);
        if (z < 0 || z + 1 >= r.end) {
          r.offset = r.end;
          r.need(2, 'string/bytes component (no terminator)');
        }
        const y = b[z + 1] ^ flip;
        if (y === 0) {
          r.offset = z + 2;
          return;
        }
        if (y !== 1) {
          r.offset = z;
          throw r.corruption(`bad escape 0x00 0x${y.toString(16)}`);
        }
        i = z + 2;
      }
    }
    default:
      r.offset--;
      throw r.corruption(`unknown primitive tag 0x${tag.toString(16)}`);
  }
}

/** true / false for a primitive tag's direction, undefined when `tag` is no primitive tag. */
export function isDescendingTag(tag: number): boolean | undefined {
  switch (tag) {
    case Tag.NULL_LOW:
    case Tag.FALSE:
    case Tag.TRUE:
    case Tag.INT64:
    case Tag.DOUBLE:
    case Tag.STRING:
    case Tag.BYTES:
      return false;
    case Tag.NULL_HIGH:
    case Tag.FALSE_DESC:
    case Tag.TRUE_DESC:
    case Tag.INT64_DESC:
    case Tag.DOUBLE_DESC:
    case Tag.STRING_DESC:
    case Tag.BYTES_DESC:
      return true;
    default:
      return undefined;
  }
}

function decodeDouble(r: ByteReader, flip: number): number {
  const raw = r.bytes(8);
  const c = Buffer.allocUnsafe(8);
  for (let i = 0; i < 8; i++) c[i] = raw[i] ^ flip;
  if (c[0] & 0x80) c[0] &= 0x7f;
  else for (let i = 0; i < 8; i++) c[i] = ~c[i] & 0xff;
  return c.readDoubleBE(0);
}

/** Undo the escaping; `flip` 0xff for descending payloads. Returns a fresh buffer. */
function decodeEscaped(r: ByteReader, flip: number): Buffer {
  const b = r.buf;
  const start = r.offset;
  // First pass: find the terminator and count escapes, so the output is allocated once.
  let i = start;
  let escapes = 0;
  for (;;) {
    if (i >= r.end) {
      r.offset = i;
      r.need(2, 'string/bytes component (no terminator)');
    }
    const x = b[i] ^ flip;
    if (x !== 0) {
      i++;
      continue;
    }
    r.offset = i;
    r.need(2, 'string/bytes component (no terminator)');
    const y = b[i + 1] ^ flip;
    if (y === 0) break;
    if (y !== 1) throw r.corruption(`bad escape 0x00 0x${y.toString(16)}`);
    escapes++;
    i += 2;
  }
  const out = Buffer.allocUnsafe(i - start - escapes);
  let o = 0;
  for (let j = start; j < i; j++) {
    const x = b[j] ^ flip;
    out[o++] = x;
    if (x === 0) j++;
  }
  r.offset = i + 2;
  return out;
}

function utf8(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

/**
 * The logical order the ascending byte order equals (descending encodings give its reverse).
 * Across types: by ascending tag (null < bytes < double < false < int64 < string < true); a column
 * holds one type plus null, so the cross-type part only has to be consistent, not meaningful.
 * Doubles: -0 < +0, NaN equals NaN and sorts after +Infinity. Strings: code point (UTF-8) order.
 */
export function comparePrimitives(a: Primitive, b: Primitive): number {
  const ta = primitiveTag(a);
  const tb = primitiveTag(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a === null || typeof a === 'boolean') return 0;
  if (typeof a === 'bigint') {
    const y = b as bigint;
    return a < y ? -1 : a > y ? 1 : 0;
  }
  if (typeof a === 'number') return compareDoubles(a, b as number);
  if (typeof a === 'string') {
    const y = b as string;
    if (a === y) return 0;
    return Buffer.compare(utf8(a), utf8(y));
  }
  return Buffer.compare(a, b as Uint8Array);
}

function compareDoubles(a: number, b: number): number {
  const na = Number.isNaN(a);
  const nb = Number.isNaN(b);
  if (na || nb) return na && nb ? 0 : na ? 1 : -1;
  if (a < b) return -1;
  if (a > b) return 1;
  if (a === 0 && b === 0) {
    const za = Object.is(a, -0);
    const zb = Object.is(b, -0);
    return za === zb ? 0 : za ? -1 : 1;
  }
  return 0;
}

/** Encode one primitive on its own (convenience for tests and bounds). */
export function encodePrimitiveToBuffer(v: Primitive, descending = false): Buffer {
  const w = new ByteWriter(16);
  encodePrimitive(w, v, descending);
  return w.finish();
}

/** Decode a buffer holding exactly one primitive. */
export function decodePrimitiveFromBuffer(b: Uint8Array): Primitive {
  const r = new ByteReader(b);
  const v = decodePrimitive(r);
  if (r.remaining !== 0) throw r.corruption('trailing bytes after primitive');
  return v;
}
