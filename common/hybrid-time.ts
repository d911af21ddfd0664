/**
 * HybridTime: a bigint `physicalMicros << 12 | logical` (YugabyteDB's layout: 12 logical bits).
 * Ordering of HybridTimes is plain bigint ordering.
 */
import { assert } from './assert';
import { DbError, ErrorCode } from './errors';

export type HybridTime = bigint;

export const LOGICAL_BITS = 12n;
export const LOGICAL_MASK = (1n << LOGICAL_BITS) - 1n;
export const HT_MIN: HybridTime = 0n;
/** Largest HybridTime that fits the unsigned 64-bit wire form. */
export const HT_MAX: HybridTime = (1n << 64n) - 1n;

export function htFrom(physicalMicros: number | bigint, logical: number | bigint = 0): HybridTime {
  const p = BigInt(physicalMicros);
  const l = BigInt(logical);
  assert(p >= 0n, 'physical time must be non-negative');
  assert(l >= 0n && l <= LOGICAL_MASK, `logical component out of range: ${l}`);
  return (p << LOGICAL_BITS) | l;
}

export function htPhysicalMicros(ht: HybridTime): bigint {
  return ht >> LOGICAL_BITS;
}

export function htLogical(ht: HybridTime): number {
  return Number(ht & LOGICAL_MASK);
}

/** `ht` plus a duration in microseconds (logical part kept). */
export function htAddMicros(ht: HybridTime, micros: number | bigint): HybridTime {
  return ht + (BigInt(micros) << LOGICAL_BITS);
}

/** Big-endian 8-byte encoding; byte order equals numeric order. */
export function htEncode(ht: HybridTime): Buffer {
  assert(ht >= 0n && ht <= HT_MAX, 'hybrid time out of range');
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(ht);
  return b;
}

export function htDecode(b: Uint8Array, offset = 0): HybridTime {
  assert(b.length - offset >= 8, 'hybrid time needs 8 bytes');
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).readBigUInt64BE(offset);
}

export function htToJson(ht: HybridTime): { physical: string; logical: number; iso: string; value: string } {
  const p = htPhysicalMicros(ht);
  return { physical: p.toString(), logical: htLogical(ht), iso: new Date(Number(p / 1000n)).toISOString(), value: ht.toString() };
}

/** `{ physical: 1700000000000000, logical: 3 }` — the form YugabyteDB logs use. */
export function htToString(ht: HybridTime): string {
  return `{ physical: ${htPhysicalMicros(ht)}, logical: ${htLogical(ht)} }`;
}

export function htMax(a: HybridTime, b: HybridTime): HybridTime {
  return a > b ? a : b;
}
export function htMin(a: HybridTime, b: HybridTime): HybridTime {
  return a < b ? a : b;
}

/**
 * A point in time as people give it on a command line (`--as_of`): a hybrid time as a decimal
 * integer (physical microseconds << 12 | logical; 16 digits or more), milliseconds since the epoch
 * (13 digits or fewer), or an ISO 8601 date-time (`2026-12-06T10:00:00Z`).
 */
export function parseTimePoint(text: string, what = 'time'): HybridTime {
  const t = text.trim();
  if (/^[0-9]{16,20}$/.test(t) && BigInt(t) < 1n << 64n) return BigInt(t);
  if (/^[0-9]{1,13}$/.test(t)) return htFrom(BigInt(t) * 1000n);
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(t) ? Date.parse(t) : Number.NaN;
  if (Number.isNaN(ms)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${what} must be a hybrid time (decimal, 16+ digits), milliseconds since the epoch or an ISO 8601 date-time, got '${text}'`);
  return htFrom(BigInt(ms) * 1000n);
}
