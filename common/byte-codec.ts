/**
 * The one byte writer and reader of tessera's binary formats (docs/architecture.md, "Encodings"):
 * Raft messages (raft/message-codec.ts), tablet log entries (tserver/tablet/tablet-op.ts) and the
 * RaftBatch envelope's reader (tserver/raft-batch-codec.ts) build on it. Varints are unsigned
 * LEB128 computed arithmetically, so every safe integer (< 2^53) encodes exactly; a reader takes the
 * error its format reports (MALFORMED_FRAME for what comes off the network, CORRUPTION for what comes
 * off the disk) and never reads past its end. The order-preserving key encoding
 * (docdb/encoding/byte-buffer.ts) is a different thing: its bytes must sort as the values do.
 */
import { DbError, ErrorCode } from './errors';

export class BinaryWriter {
  buf: Buffer;
  pos = 0;

  constructor(
    initialBytes: number,
    /** Names the format in the error for a value it cannot encode. */
    private readonly what = 'codec',
  ) {
    // Unzeroed, and from Node's pool when small: every byte up to pos is written before use.
    this.buf = Buffer.allocUnsafe(Math.max(16, initialBytes));
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.pos + n) cap *= 2;
    const nb = Buffer.allocUnsafe(cap);
    this.buf.copy(nb, 0, 0, this.pos);
    this.buf = nb;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }

  /** Unsigned varint of a non-negative safe integer. */
  uv(v: number): void {
    if (!Number.isSafeInteger(v) || v < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${this.what}: not a non-negative safe integer: ${v}`);
    this.ensure(8);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }

  /** Zigzag varint, for integers that may be negative (|v| < 2^52). */
  sv(v: number): void {
    if (!Number.isSafeInteger(v) || Math.abs(v) >= 2 ** 52) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${this.what}: integer out of range: ${v}`);
    this.uv(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  f64le(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  f64be(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleBE(v, this.pos);
    this.pos += 8;
  }

  u64be(v: bigint): void {
    this.ensure(8);
    this.buf.writeBigUInt64BE(v, this.pos);
    this.pos += 8;
  }

  i64be(v: bigint): void {
    this.ensure(8);
    this.buf.writeBigInt64BE(v, this.pos);
    this.pos += 8;
  }

  /** Length (varint) and bytes. */
  bytes(b: Uint8Array): void {
    this.uv(b.byteLength);
    this.raw(b);
  }

  /** Bytes without a length. */
  raw(b: Uint8Array): void {
    this.ensure(b.byteLength);
    this.buf.set(b, this.pos);
    this.pos += b.byteLength;
  }

  /** Length (varint) and UTF-8. */
  str(s: string): void {
    const n = Buffer.byteLength(s);
    this.uv(n);
    this.ensure(n);
    this.buf.write(s, this.pos);
    this.pos += n;
  }

  bool(v: boolean): void {
    this.u8(v ? 1 : 0);
  }

  result(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

export class BinaryReader {
  pos: number;
  readonly buf: Buffer;
  private static readonly utf8 = new TextDecoder('utf-8', { fatal: true });

  constructor(
    b: Uint8Array,
    /** The error a format reports for bytes it cannot read. */
    readonly bad: (why: string) => DbError,
    start = 0,
    readonly end = b.byteLength,
    /** Largest count (of bytes or items) a field may announce: bounds allocation on garbage. */
    private readonly countMax = 1 << 30,
  ) {
    this.buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    this.pos = start;
  }

  need(n: number, what = 'truncated'): void {
    if (n < 0 || this.pos + n > this.end) throw this.bad(what);
  }

  u8(): number {
    if (this.pos >= this.end) throw this.bad('truncated');
    return this.buf[this.pos++]!;
  }

  /** Unsigned varint (at most 8 bytes: up to 2^56, refused past 2^53). */
  uv(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.u8();
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(result)) throw this.bad('varint out of range');
        return result;
      }
      mul *= 0x80;
    }
    throw this.bad('varint too long');
  }

  sv(): number {
    const z = this.uv();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  /** A varint count, at most countMax. */
  count(): number {
    const n = this.uv();
    if (n > this.countMax) throw this.bad('count too large');
    return n;
  }

  f64le(): number {
    this.need(8);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  f64be(): number {
    this.need(8);
    const v = this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }

  u64be(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64BE(this.pos);
    this.pos += 8;
    return v;
  }

  i64be(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }

  /**
   * Length (varint) and bytes, copied: the buffer may be reused by the transport, and a value
   * outlives it (a view would also pin the whole received chunk while the value is kept).
   */
  bytes(): Uint8Array {
    const n = this.count();
    this.need(n, 'truncated bytes');
    const out = new Uint8Array(n);
    out.set(this.buf.subarray(this.pos, this.pos + n));
    this.pos += n;
    return out;
  }

  /** Length (varint) and UTF-8, refused when not well-formed. */
  str(): string {
    return this.utf8(this.count());
  }

  /** `n` bytes of UTF-8 (no length before them), refused when not well-formed. */
  utf8(n: number): string {
    this.need(n, 'truncated string');
    let s: string;
    try {
      s = BinaryReader.utf8.decode(this.buf.subarray(this.pos, this.pos + n));
    } catch {
      throw this.bad('bad utf-8');
    }
    this.pos += n;
    return s;
  }

  bool(): boolean {
    const b = this.u8();
    if (b > 1) throw this.bad('bad boolean');
    return b === 1;
  }

  done(): boolean {
    return this.pos === this.end;
  }
}
