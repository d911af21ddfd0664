/**
 * Stored values. Unlike keys they need no order, so payloads are raw (no escaping) and a string or
 * bytes value simply runs to the end of the value.
 *
 *   [ 't' + u64 BE ttlMs ]  then one of
 *     'X'                     tombstone (never with a TTL)
 *     'V'                     version tombstone: masks the versions of its sub-key at exactly its
 *                             hybrid time, nothing else (HBase's one-version Delete; never with a TTL)
 *     'L'                     liveness marker (the row exists)
 *     primitive tag + raw     '$' null, 'F'/'T' bool, 'I' + 8-byte BE int64, 'D' + 8-byte BE double,
 *                             'S' + UTF-8, 'B' + bytes
 *
 * The TTL counts from the version's hybrid time (the storage layer applies it at read and GC time).
 */
import { DbError, ErrorCode } from '../../common/errors';
import { LARGE_STRING_BYTES_MIN } from '../../common/large-strings';
import type { Primitive } from './types';
import { ByteReader, ByteWriter } from './byte-buffer';
import { Tag, ValueTag } from './tags';

/**
 * `utf8`: a string value's UTF-8 bytes when they are at hand (a large string read from a log entry,
 * tserver/tablet/tablet-op-rows.ts): written as they are, so `value` — then a getter that decodes on
 * first use — is never turned into a JavaScript string on the way from the log to RocksDB.
 */
export type DocValue = { type: 'primitive'; value: Primitive; ttlMs?: number; utf8?: Uint8Array } | { type: 'tombstone' } | { type: 'versionTombstone' } | { type: 'liveness'; ttlMs?: number };

/** u64 milliseconds would outlive a Number; cap TTLs at what a JavaScript number holds exactly. */
const TTL_MS_MAX = Number.MAX_SAFE_INTEGER;

function writeTtl(w: ByteWriter, ttlMs: number | undefined): void {
  if (ttlMs === undefined) return;
  if (!Number.isInteger(ttlMs) || ttlMs < 0 || ttlMs > TTL_MS_MAX) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `bad TTL ${ttlMs} ms`);
  }
  w.u8(ValueTag.TTL);
  w.u64BE(BigInt(ttlMs));
}

/** `utf8Bytes`: the UTF-8 length of a string value when the caller already measured it. */
export function writeValue(w: ByteWriter, v: DocValue, utf8Bytes?: number): void {
  switch (v.type) {
    case 'tombstone':
      w.u8(ValueTag.TOMBSTONE);
      return;
    case 'versionTombstone':
      w.u8(ValueTag.VERSION_TOMBSTONE);
      return;
    case 'liveness':
      writeTtl(w, v.ttlMs);
      w.u8(ValueTag.LIVENESS);
      return;
    case 'primitive':
      writeTtl(w, v.ttlMs);
      if (v.utf8 !== undefined) {
        w.u8(Tag.STRING);
        return w.bytes(v.utf8);
      }
      writeRawPrimitive(w, v.value, utf8Bytes);
      return;
  }
}

function writeRawPrimitive(w: ByteWriter, p: Primitive, utf8Bytes?: number): void {
  if (p === null) return w.u8(Tag.NULL_LOW);
  switch (typeof p) {
    case 'boolean':
      return w.u8(p ? Tag.TRUE : Tag.FALSE);
    case 'bigint':
      if (p < -(1n << 63n) || p >= 1n << 63n) throw new DbError(ErrorCode.INVALID_ARGUMENT, `int64 out of range: ${p}`);
      w.u8(Tag.INT64);
      return w.u64BE(BigInt.asUintN(64, p));
    case 'number': {
      w.u8(Tag.DOUBLE);
      w.ensure(8);
      w.raw().writeDoubleBE(p, w.length);
      return w.advance(8);
    }
    case 'string': {
      w.u8(Tag.STRING);
      const n = utf8Bytes ?? Buffer.byteLength(p, 'utf8');
      w.ensure(n);
      w.raw().write(p, w.length, 'utf8');
      return w.advance(n);
    }
    default:
      w.u8(Tag.BYTES);
      return w.bytes(p);
  }
}

/** The bytes writeValue writes for `v` (`utf8Bytes` as for writeValue). */
export function encodedValueBytes(v: DocValue, utf8Bytes?: number): number {
  const ttl = (v.type === 'primitive' || v.type === 'liveness') && v.ttlMs !== undefined ? 9 : 0;
  if (v.type !== 'primitive') return ttl + 1;
  if (v.utf8 !== undefined) return ttl + 1 + v.utf8.byteLength;
  const p = v.value;
  if (p === null) return ttl + 1;
  switch (typeof p) {
    case 'boolean':
      return ttl + 1;
    case 'bigint':
    case 'number':
      return ttl + 9;
    case 'string':
      return ttl + 1 + (utf8Bytes ?? Buffer.byteLength(p, 'utf8'));
    default:
      return ttl + 1 + p.length;
  }
}

/**
 * `v` encoded, after `prefix` when given (an intent value's header), in one buffer of exactly the
 * right size: one allocation and no copy however large the value (a 1 MiB string used to cost a
 * 3 MiB writer, a 1 MiB copy out of it and, behind a prefix, a third copy).
 */
export function encodeValue(v: DocValue, prefix?: Uint8Array): Buffer {
  // A string is measured once, for the size and for the write.
  const utf8Bytes = v.type === 'primitive' && v.utf8 === undefined && typeof v.value === 'string' ? Buffer.byteLength(v.value, 'utf8') : undefined;
  const w = new ByteWriter((prefix?.length ?? 0) + encodedValueBytes(v, utf8Bytes));
  if (prefix !== undefined) w.bytes(prefix);
  writeValue(w, v, utf8Bytes);
  return w.finish();
}

export function decodeValue(b: Uint8Array): DocValue {
  const r = new ByteReader(b);
  let ttlMs: number | undefined;
  if (r.peek() === ValueTag.TTL) {
    r.offset++;
    const t = r.u64BE();
    if (t > BigInt(TTL_MS_MAX)) throw r.corruption(`TTL out of range: ${t}`);
    ttlMs = Number(t);
  }
  const tag = r.u8();
  let v: DocValue;
  if (tag === ValueTag.TOMBSTONE) {
    if (ttlMs !== undefined) throw r.corruption('tombstone with a TTL');
    v = { type: 'tombstone' };
  } else if (tag === ValueTag.VERSION_TOMBSTONE) {
    if (ttlMs !== undefined) throw r.corruption('version tombstone with a TTL');
    v = { type: 'versionTombstone' };
  } else if (tag === ValueTag.LIVENESS) {
    v = ttlMs === undefined ? { type: 'liveness' } : { type: 'liveness', ttlMs };
  } else if (tag === Tag.STRING && r.remaining >= LAZY_STRING_BYTES_MIN) {
    v = lazyString(r.bytes(r.remaining), ttlMs);
  } else {
    const value = readRawPrimitive(r, tag);
    v = ttlMs === undefined ? { type: 'primitive', value } : { type: 'primitive', value, ttlMs };
  }
  if (r.remaining !== 0) throw r.corruption('trailing bytes after value');
  return v;
}

/**
 * Stored strings of at least this many bytes decode only when their value is looked at: a read
 * that does not return the column (count(*), a projection, a filter on other columns) never turns
 * a megabyte into a string (docs/raft-write-path.md, "Large values").
 */
export const LAZY_STRING_BYTES_MIN = LARGE_STRING_BYTES_MIN;

/**
 * `base` with a string `value` kept as its UTF-8 bytes: `utf8` (not enumerable: a copy, a
 * comparison or a JSON dump sees only the string) and a `value` getter that decodes them on first
 * use with `decode` (the log's and the wire's decoders refuse bad UTF-8, the storage's does not).
 * Used for stored values here, for log entries' columns (tserver/tablet/tablet-op-rows.ts) and for
 * columns sent as bytes (tserver/row-pb.ts).
 */
export function withLazyUtf8<T extends object>(base: T, utf8: Buffer, decode: (b: Buffer) => string): T & { value: string; utf8: Buffer } {
  let decoded: string | undefined;
  Object.defineProperty(base, 'value', { get: () => (decoded ??= decode(utf8)), enumerable: true, configurable: true });
  Object.defineProperty(base, 'utf8', { value: utf8, enumerable: false });
  return base as T & { value: string; utf8: Buffer };
}

/** A string value kept as its UTF-8 bytes; `value` decodes them on first use. */
function lazyString(utf8: Buffer, ttlMs: number | undefined): DocValue {
  return withLazyUtf8(ttlMs === undefined ? { type: 'primitive' as const } : { type: 'primitive' as const, ttlMs }, utf8, (b) => b.toString('utf8'));
}

function readRawPrimitive(r: ByteReader, tag: number): Primitive {
  switch (tag) {
    case Tag.NULL_LOW:
      return null;
    case Tag.FALSE:
      return false;
    case Tag.TRUE:
      return true;
    case Tag.INT64:
      return BigInt.asIntN(64, r.u64BE());
    case Tag.DOUBLE: {
      r.need(8, 'double value');
      const d = r.buf.readDoubleBE(r.offset);
      r.offset += 8;
      return d;
    }
    case Tag.STRING:
      return r.bytes(r.remaining).toString('utf8');
    case Tag.BYTES:
      return new Uint8Array(r.bytes(r.remaining));
    default:
      throw r.corruption(`unknown value tag 0x${tag.toString(16)}`);
  }
}
