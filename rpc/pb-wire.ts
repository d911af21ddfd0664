/**
 * Protobuf wire format by hand, for the messages on the hot path of row operations (docs/rows.md,
 * "Coalesced on the wire"): protobufjs's fromObject/toObject conversions of plain objects cost more
 * than the encoding itself (they were ~15 % of a lock-cycle client's CPU), so rpc/row-codec.ts reads
 * and writes these messages directly. The bytes are ordinary proto3 (rpc/protos/): a peer using the
 * protobufjs codec of rpc/proto.ts reads them, and they read its bytes, into exactly the same plain
 * objects (test/unit/row-codec.test.ts checks both directions against protobufjs).
 *
 * The writer puts a nested message's length in one reserved byte and moves the message when it turns
 * out longer than 127 bytes; the reader never reads past a message's end (MALFORMED_FRAME) and skips
 * fields it does not know, as protobuf readers do.
 */
import { BinaryWriter } from '../common/byte-codec';
import { DbError, ErrorCode } from '../common/errors';
import type { ColumnValuePB, DocKeyPB, RowPB, ValuePB } from './service-methods';

/** Wire types (protobuf encoding). */
export const WT = { VARINT: 0, I64: 1, LEN: 2, I32: 5 } as const;

/** A field's tag byte(s): field number and wire type. */
export const tag = (field: number, wt: number): number => (field << 3) | wt;

/** The protobuf writer: tessera's byte writer (common/byte-codec.ts: buffer, growth, bool, length-prefixed bytes) with protobuf's field encodings. */
export class PbWriter extends BinaryWriter {
  constructor(initialBytes = 256) {
    super(initialBytes, 'protobuf');
  }

  /** Varint of a uint32 (a tag, a count, a uint32 field). */
  u32(v: number): void {
    this.ensure(5);
    v >>>= 0;
    while (v > 127) {
      this.buf[this.pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  /** Varint of a 64-bit value given as its two 32-bit halves (unsigned). */
  private halves(lo: number, hi: number): void {
    this.ensure(10);
    while (hi !== 0) {
      this.buf[this.pos++] = (lo & 127) | 128;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    this.u32(lo);
  }

  /** uint64 varint (the value taken modulo 2^64, as protobuf does). */
  u64(v: bigint): void {
    if (v >= 0n && v < 0x100000000n) return this.u32(Number(v));
    const u = BigInt.asUintN(64, v);
    this.halves(Number(u & 0xffffffffn), Number(u >> 32n));
  }

  /** sint64 (zigzag) varint. */
  s64(v: bigint): void {
    if (v >= -0x80000000n && v < 0x80000000n) {
      const n = Number(v);
      return this.u32(n >= 0 ? n * 2 : -n * 2 - 1);
    }
    this.u64(BigInt.asUintN(64, (v << 1n) ^ (v >> 63n)));
  }

  fixed64(v: bigint): void {
    this.ensure(8);
    this.buf.writeBigUInt64LE(BigInt.asUintN(64, v), this.pos);
    this.pos += 8;
  }

  double(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /** Length and UTF-8 of `s`. */
  string(s: string): void {
    if (s.length < 43) {
      // At most 3 bytes a UTF-16 unit: under 128 bytes, the length is one byte.
      this.ensure(1 + s.length * 3);
      const n = this.buf.write(s, this.pos + 1);
      this.buf[this.pos] = n;
      this.pos += 1 + n;
      return;
    }
    const n = Buffer.byteLength(s);
    this.u32(n);
    this.ensure(n);
    this.pos += this.buf.write(s, this.pos);
  }

  /** Start a length-delimited nested message (after its tag); returns what `end` takes. */
  begin(): number {
    this.ensure(1);
    return this.pos++;
  }

  /** End the nested message begun at `at`: its length in front of it. */
  end(at: number): void {
    const len = this.pos - at - 1;
    if (len < 128) {
      this.buf[at] = len;
      return;
    }
    let extra = 0;
    for (let l = len; l > 127; l >>>= 7) extra++;
    this.ensure(extra);
    this.buf.copy(this.buf, at + 1 + extra, at + 1, this.pos);
    this.pos = at;
    this.u32(len);
    this.pos += len;
  }
}

export class PbReader {
  pos = 0;
  readonly buf: Buffer;
  /** The halves of the last varint64 read. */
  private lo = 0;
  private hi = 0;

  constructor(b: Uint8Array) {
    this.buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  }

  bad(why: string): DbError {
    return new DbError(ErrorCode.MALFORMED_FRAME, `malformed protobuf: ${why}`);
  }

  private byte(end: number): number {
    if (this.pos >= end) throw this.bad('truncated varint');
    return this.buf[this.pos++]!;
  }

  /** A varint (up to 64 bits) into lo/hi. */
  private varint64(end: number): void {
    let lo = 0;
    let b = 0;
    for (let i = 0; i < 4; i++) {
      b = this.byte(end);
      lo = (lo | ((b & 127) << (i * 7))) >>> 0;
      if (b < 128) return this.set(lo, 0);
    }
    b = this.byte(end);
    lo = (lo | ((b & 127) << 28)) >>> 0;
    let hi = (b & 127) >> 4;
    if (b < 128) return this.set(lo, hi);
    for (let i = 0; i < 5; i++) {
      b = this.byte(end);
      hi = (hi | ((b & 127) << (i * 7 + 3))) >>> 0;
      if (b < 128) return this.set(lo, hi);
    }
    throw this.bad('varint too long');
  }

  private set(lo: number, hi: number): void {
    this.lo = lo;
    this.hi = hi;
  }

  /** A uint32 field, tag or length (a longer varint keeps its low 32 bits, as protobuf does). */
  u32(end: number): number {
    if (this.pos < end) {
      const b = this.buf[this.pos]!;
      if (b < 128) {
        this.pos++;
        return b;
      }
    }
    this.varint64(end);
    return this.lo;
  }

  u64(end: number): bigint {
    this.varint64(end);
    return this.hi === 0 ? BigInt(this.lo) : (BigInt(this.hi) << 32n) | BigInt(this.lo);
  }

  s64(end: number): bigint {
    this.varint64(end);
    if (this.hi === 0) {
      const z = this.lo;
      return BigInt(z % 2 === 0 ? z / 2 : -(z + 1) / 2);
    }
    const u = (BigInt(this.hi) << 32n) | BigInt(this.lo);
    return (u >> 1n) ^ -(u & 1n);
  }

  bool(end: number): boolean {
    this.varint64(end);
    return this.lo !== 0 || this.hi !== 0;
  }

  fixed64(end: number): bigint {
    if (this.pos + 8 > end) throw this.bad('truncated fixed64');
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }

  double(end: number): number {
    if (this.pos + 8 > end) throw this.bad('truncated double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** A length-delimited field's end (its bytes start at pos). */
  len(end: number): number {
    const n = this.u32(end);
    const e = this.pos + n;
    if (e > end) throw this.bad('length past the end of its message');
    return e;
  }

  string(end: number): string {
    const e = this.len(end);
    const s = this.buf.toString('utf8', this.pos, e);
    this.pos = e;
    return s;
  }

  /** Copied: the transport may reuse its buffer, and a value outlives the message. */
  bytes(end: number): Buffer {
    const e = this.len(end);
    const b = Buffer.from(this.buf.subarray(this.pos, e));
    this.pos = e;
    return b;
  }

  /** Skip a field of an unknown number. */
  skip(wireType: number, end: number): void {
    switch (wireType) {
      case WT.VARINT:
        this.varint64(end);
        return;
      case WT.I64:
        this.pos += 8;
        break;
      case WT.LEN:
        this.pos = this.len(end);
        return;
      case WT.I32:
        this.pos += 4;
        break;
      default:
        throw this.bad(`wire type ${wireType}`);
    }
    if (this.pos > end) throw this.bad('truncated field');
  }
}

/** A 64-bit field's value as given by a caller: bigint, or a number or a decimal string (as protobufjs takes). */
export function big(v: bigint | number | string | null | undefined): bigint {
  if (v === undefined || v === null) return 0n;
  return typeof v === 'bigint' ? v : BigInt(v);
}

// ---- common.proto messages the row messages hold ----------------------------------------------------

export function writeValue(w: PbWriter, field: number, v: ValuePB): void {
  w.u32(tag(field, WT.LEN));
  const at = w.begin();
  // A oneof: a set member is written even when it holds its type's default (0, '', false).
  if (v.int64Value !== undefined && v.int64Value !== null) {
    w.u32(tag(1, WT.VARINT));
    w.s64(big(v.int64Value));
  }
  if (v.doubleValue !== undefined && v.doubleValue !== null) {
    w.u32(tag(2, WT.I64));
    w.double(Number(v.doubleValue));
  }
  if (v.stringValue !== undefined && v.stringValue !== null) {
    w.u32(tag(3, WT.LEN));
    w.string(String(v.stringValue));
  }
  if (v.bytesValue !== undefined && v.bytesValue !== null) {
    w.u32(tag(4, WT.LEN));
    w.bytes(v.bytesValue);
  }
  if (v.boolValue !== undefined && v.boolValue !== null) {
    w.u32(tag(5, WT.VARINT));
    w.bool(Boolean(v.boolValue));
  }
  if (v.utf8Value !== undefined && v.utf8Value !== null) {
    w.u32(tag(6, WT.LEN));
    w.bytes(v.utf8Value);
  }
  w.end(at);
}

/** A ValuePB: only its set member (the last one read, as protobuf's oneof keeps). */
export function readValue(r: PbReader, end: number): ValuePB {
  const e = r.len(end);
  let v: ValuePB = {};
  while (r.pos < e) {
    const t = r.u32(e);
    switch (t) {
      case tag(1, WT.VARINT):
        v = { int64Value: r.s64(e) };
        break;
      case tag(2, WT.I64):
        v = { doubleValue: r.double(e) };
        break;
      case tag(3, WT.LEN):
        v = { stringValue: r.string(e) };
        break;
      case tag(4, WT.LEN):
        v = { bytesValue: r.bytes(e) };
        break;
      case tag(5, WT.VARINT):
        v = { boolValue: r.bool(e) };
        break;
      case tag(6, WT.LEN):
        v = { utf8Value: r.bytes(e) };
        break;
      default:
        r.skip(t & 7, e);
    }
  }
  return v;
}

export function writeDocKey(w: PbWriter, field: number, k: DocKeyPB): void {
  w.u32(tag(field, WT.LEN));
  const at = w.begin();
  if (k.hash) {
    w.u32(tag(1, WT.VARINT));
    w.u32(k.hash);
  }
  for (const v of k.hashed ?? []) writeValue(w, 2, v);
  for (const v of k.range ?? []) writeValue(w, 3, v);
  w.end(at);
}

export function readDocKey(r: PbReader, end: number): DocKeyPB {
  const e = r.len(end);
  const k = { hash: 0, hashed: [] as ValuePB[], range: [] as ValuePB[] };
  while (r.pos < e) {
    const t = r.u32(e);
    if (t === tag(1, WT.VARINT)) k.hash = r.u32(e);
    else if (t === tag(2, WT.LEN)) k.hashed.push(readValue(r, e));
    else if (t === tag(3, WT.LEN)) k.range.push(readValue(r, e));
    else r.skip(t & 7, e);
  }
  return k;
}

function writeColumnValue(w: PbWriter, field: number, c: ColumnValuePB): void {
  w.u32(tag(field, WT.LEN));
  const at = w.begin();
  if (c.columnId) {
    w.u32(tag(1, WT.VARINT));
    w.u32(c.columnId);
  }
  if (c.value) writeValue(w, 2, c.value);
  w.end(at);
}

function readColumnValue(r: PbReader, end: number): ColumnValuePB {
  const e = r.len(end);
  const c: ColumnValuePB = { columnId: 0 };
  while (r.pos < e) {
    const t = r.u32(e);
    if (t === tag(1, WT.VARINT)) c.columnId = r.u32(e);
    else if (t === tag(2, WT.LEN)) c.value = readValue(r, e);
    else r.skip(t & 7, e);
  }
  return c;
}

export function writeRow(w: PbWriter, field: number, row: RowPB): void {
  w.u32(tag(field, WT.LEN));
  const at = w.begin();
  if (row.key) writeDocKey(w, 1, row.key);
  for (const c of row.columns ?? []) writeColumnValue(w, 2, c);
  const ht = big(row.writeHt);
  if (ht !== 0n) {
    w.u32(tag(3, WT.I64));
    w.fixed64(ht);
  }
  w.end(at);
}

export function readRow(r: PbReader, end: number): RowPB {
  const e = r.len(end);
  const row: RowPB = { columns: [], writeHt: 0n };
  while (r.pos < e) {
    const t = r.u32(e);
    if (t === tag(1, WT.LEN)) row.key = readDocKey(r, e);
    else if (t === tag(2, WT.LEN)) row.columns!.push(readColumnValue(r, e));
    else if (t === tag(3, WT.I64)) row.writeHt = r.fixed64(e);
    else r.skip(t & 7, e);
  }
  return row;
}
