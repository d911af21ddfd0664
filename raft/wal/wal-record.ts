/**
 * WAL record format: `[length u32][crc32c u32][term u64][index u64][type u8][payload]`, little endian.
 * `length` counts the bytes after the crc (17 + payload); the crc covers exactly those bytes. A
 * segment file starts with an 8-byte header: magic "TWAL" and a format version.
 */
import { crc32c } from './crc32c';
import type { EntryType } from '../types';

export const SEGMENT_MAGIC = 0x4c415754; // "TWAL" read as u32 LE
export const SEGMENT_VERSION = 1;
export const SEGMENT_HEADER_BYTES = 8;
/** length + crc */
export const RECORD_PREFIX_BYTES = 8;
/** term + index + type */
export const RECORD_FIXED_BODY_BYTES = 17;
export const RECORD_HEADER_BYTES = RECORD_PREFIX_BYTES + RECORD_FIXED_BODY_BYTES;
/** Larger lengths are treated as garbage (a torn or corrupt length field), never allocated. */
export const RECORD_BYTES_MAX = 256 * 1024 * 1024;

export const RecordType = {
  normal: 1,
  noop: 2,
  confChange: 3,
  /** Hard state (term field = term, index field = commit, payload = vote). Not a log entry. */
  hardState: 10,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

const ENTRY_TO_RECORD: Record<EntryType, RecordType> = { normal: RecordType.normal, noop: RecordType.noop, confChange: RecordType.confChange };
const RECORD_TO_ENTRY: Partial<Record<number, EntryType>> = { [RecordType.normal]: 'normal', [RecordType.noop]: 'noop', [RecordType.confChange]: 'confChange' };

export function recordTypeOf(t: EntryType): RecordType {
  return ENTRY_TO_RECORD[t];
}

export function entryTypeOf(t: number): EntryType | undefined {
  return RECORD_TO_ENTRY[t];
}

export function isKnownRecordType(t: number): boolean {
  return t === RecordType.hardState || RECORD_TO_ENTRY[t] !== undefined;
}

export function recordBytes(payloadBytes: number): number {
  return RECORD_HEADER_BYTES + payloadBytes;
}

const TWO_32 = 0x1_0000_0000;

function writeU64(buf: Buffer, pos: number, n: number): void {
  buf.writeUInt32LE(n % TWO_32, pos);
  buf.writeUInt32LE(Math.floor(n / TWO_32), pos + 4);
}

function readU64(buf: Uint8Array, pos: number): number {
  const lo = (buf[pos]! | (buf[pos + 1]! << 8) | (buf[pos + 2]! << 16) | (buf[pos + 3]! << 24)) >>> 0;
  const hi = (buf[pos + 4]! | (buf[pos + 5]! << 8) | (buf[pos + 6]! << 16) | (buf[pos + 7]! << 24)) >>> 0;
  return hi * TWO_32 + lo;
}

function readU32(buf: Uint8Array, pos: number): number {
  return (buf[pos]! | (buf[pos + 1]! << 8) | (buf[pos + 2]! << 16) | (buf[pos + 3]! << 24)) >>> 0;
}

/** Encode one record at `pos`; returns the position after it. `buf` must have room. */
export function encodeRecord(buf: Buffer, pos: number, term: number, index: number, type: RecordType, payload: Uint8Array): number {
  const bodyBytes = RECORD_FIXED_BODY_BYTES + payload.length;
  buf.writeUInt32LE(bodyBytes, pos);
  writeU64(buf, pos + 8, term);
  writeU64(buf, pos + 16, index);
  buf[pos + 24] = type;
  buf.set(payload, pos + RECORD_HEADER_BYTES);
  const end = pos + RECORD_PREFIX_BYTES + bodyBytes;
  buf.writeUInt32LE(crc32c(buf, 0, pos + RECORD_PREFIX_BYTES, end), pos + 4);
  return end;
}

export function encodeSegmentHeader(): Buffer {
  const b = Buffer.alloc(SEGMENT_HEADER_BYTES);
  b.writeUInt32LE(SEGMENT_MAGIC, 0);
  b.writeUInt32LE(SEGMENT_VERSION, 4);
  return b;
}

export function segmentHeaderValid(buf: Uint8Array): boolean {
  return buf.length >= SEGMENT_HEADER_BYTES && readU32(buf, 0) === SEGMENT_MAGIC && readU32(buf, 4) === SEGMENT_VERSION;
}

export interface DecodedRecord {
  term: number;
  index: number;
  type: number;
  payloadStart: number;
  payloadEnd: number;
  /** Position right after the record. */
  end: number;
}

export type DecodeResult = { ok: true; rec: DecodedRecord } | { ok: false; reason: 'short' | 'length' | 'crc' | 'type' };

/** Decode the record at `pos` of `buf[0, limit)`, verifying length and checksum. */
export function decodeRecord(buf: Uint8Array, pos: number, limit: number): DecodeResult {
  if (limit - pos < RECORD_HEADER_BYTES) return { ok: false, reason: 'short' };
  const bodyBytes = readU32(buf, pos);
  if (bodyBytes < RECORD_FIXED_BODY_BYTES || bodyBytes > RECORD_BYTES_MAX) return { ok: false, reason: 'length' };
  const end = pos + RECORD_PREFIX_BYTES + bodyBytes;
  if (end > limit) return { ok: false, reason: 'short' };
  const crc = readU32(buf, pos + 4);
  if (crc32c(buf, 0, pos + RECORD_PREFIX_BYTES, end) !== crc) return { ok: false, reason: 'crc' };
  const type = buf[pos + 24]!;
  if (!isKnownRecordType(type)) return { ok: false, reason: 'type' };
  return { ok: true, rec: { term: readU64(buf, pos + 8), index: readU64(buf, pos + 16), type, payloadStart: pos + RECORD_HEADER_BYTES, payloadEnd: end, end } };
}
