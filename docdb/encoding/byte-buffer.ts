/**
 * ByteWriter / ByteReader: the two cursors every encoder and decoder in docdb/encoding/ works with.
 *
 * The writer grows by doubling, so encoding a key costs one or two allocations however many
 * components it has. The reader turns every short or malformed input into a DbError CORRUPTION:
 * keys and values come back from disk, and a damaged record must stop the replica with a clear
 * code rather than decode into garbage (docs/conventions.md, "Errors").
 */
import { DbError, ErrorCode } from '../../common/errors';

const INITIAL_CAPACITY_BYTES = 64;
/** finish() hands out the writer's own buffer when at most this many bytes of it are unused. */
const FINISH_SPARE_BYTES_MAX = 32;
/** Keys and values are small; a writer that wants more than this is a bug (runaway loop). */
export const BYTE_WRITER_MAX_BYTES = 256 * 1024 * 1024;

export class ByteWriter {
  private buf: Buffer;
  private len = 0;

  constructor(initialCapacityBytes = INITIAL_CAPACITY_BYTES) {
    this.buf = Buffer.allocUnsafe(Math.max(8, initialCapacityBytes));
  }

  get length(): number {
    return this.len;
  }

  /** Make room for `n` more bytes. */
  ensure(n: number): void {
    const need = this.len + n;
    if (need <= this.buf.length) return;
    if (need > BYTE_WRITER_MAX_BYTES) {
      throw new DbError(ErrorCode.INVALID_ARGUMENT, `encoded value too large: ${need} bytes`, { bytes: need });
    }
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = Buffer.allocUnsafe(Math.min(cap, BYTE_WRITER_MAX_BYTES));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.len++] = v & 0xff;
  }

  u16BE(v: number): void {
    this.ensure(2);
    this.buf.writeUInt16BE(v, this.len);
    this.len += 2;
  }

  u32BE(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32BE(v >>> 0, this.len);
    this.len += 4;
  }

  u64BE(v: bigint): void {
    this.ensure(8);
    this.buf.writeBigUInt64BE(v, this.len);
    this.len += 8;
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  /**
   * Direct access for encoders that write in place (UTF-8, complementing a payload): the live
   * buffer, valid until the next call that may grow it. Call `ensure` first and `advance` after.
   */
  raw(): Buffer {
    return this.buf;
  }

  advance(n: number): void {
    this.len += n;
  }

  /** Forget the written bytes after position `at` (used when an encoder rewrites its payload). */
  truncate(at: number): void {
    this.len = at;
  }

  /** Complement bytes [from, length): turns an ascending encoding into its descending twin. */
  complementFrom(from: number): void {
    const b = this.buf;
    for (let i = from; i < this.len; i++) b[i] = ~b[i] & 0xff;
  }

  /** A copy of the written bytes; the writer stays usable. */
  toBuffer(): Buffer {
    const out = Buffer.allocUnsafe(this.len);
    this.buf.copy(out, 0, 0, this.len);
    return out;
  }

  /**
   * The written bytes of a writer that is done with: the buffer itself when little of it is spare
   * (no second allocation and copy on every encoded key), else an exact copy, so that a long-lived
   * key or value never pins a mostly empty buffer.
   */
  finish(): Buffer {
    const spare = this.buf.length - this.len;
    return spare <= FINISH_SPARE_BYTES_MAX ? this.buf.subarray(0, this.len) : this.toBuffer();
  }

  /** A view of the written bytes without copying; valid until the writer is written to again. */
  view(): Buffer {
    return this.buf.subarray(0, this.len);
  }

  reset(): void {
    this.len = 0;
  }
}

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

export class ByteReader {
  readonly buf: Buffer;
  offset: number;
  /** Exclusive end: a reader may be confined to a slice of a key (e.g. the part before its time). */
  readonly end: number;

  constructor(buf: Uint8Array, offset = 0, end = buf.length) {
    this.buf = asBuffer(buf);
    if (offset < 0 || end > this.buf.length || offset > end) {
      throw new DbError(ErrorCode.CORRUPTION, `bad reader bounds ${offset}..${end} of ${this.buf.length}`);
    }
    this.offset = offset;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.offset;
  }

  /** Throws CORRUPTION unless `n` more bytes are available. */
  need(n: number, what = 'value'): void {
    if (this.end - this.offset < n) {
      throw new DbError(ErrorCode.CORRUPTION, `truncated ${what}: need ${n} bytes at offset ${this.offset}, have ${this.end - this.offset}`, {
        offset: this.offset,
      });
    }
  }

  /** The next byte without consuming it, or -1 at the end. */
  peek(): number {
    return this.offset < this.end ? this.buf[this.offset] : -1;
  }

  u8(): number {
    this.need(1);
    return this.buf[this.offset++];
  }

  u16BE(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.offset);
    this.offset += 2;
    return v;
  }

  u32BE(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.offset);
    this.offset += 4;
    return v;
  }

  u64BE(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64BE(this.offset);
    this.offset += 8;
    return v;
  }

  /** A view (no copy) of the next `n` bytes. */
  bytes(n: number): Buffer {
    this.need(n);
    const v = this.buf.subarray(this.offset, this.offset + n);
    this.offset += n;
    return v;
  }

  corruption(message: string): DbError {
    return new DbError(ErrorCode.CORRUPTION, `${message} at offset ${this.offset}`, { offset: this.offset });
  }
}
