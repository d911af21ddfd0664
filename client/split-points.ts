/**
 * Split points of a range table given at create time (docs/splitting.md): each point is a tuple of
 * leading range-column values, encoded as the DocKey prefix the master cuts the key space at.
 */
import { DbError, ErrorCode } from '../common/errors';
import { encodeDocKeyBytes, type KeyValue } from '../common/partition-hash';
import type { ColumnSpec } from './client-types';

function invalid(msg: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg);
}

/** A value for a range column of type `type` (numbers for int64 become bigints; text is parsed). */
export function splitValue(type: string, v: unknown, col: string): KeyValue {
  const bad = (): DbError => invalid(`split point value ${String(v)} is not a valid ${type} for range column ${col}`);
  switch (type) {
    case 'int64':
      if (typeof v === 'bigint') return v;
      if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
      if (typeof v === 'string' && /^-?[0-9]{1,19}$/.test(v.trim())) return BigInt(v.trim());
      throw bad();
    case 'double': {
      const n = typeof v === 'string' ? Number(v) : v;
      if (typeof n === 'number' && Number.isFinite(n)) return n;
      throw bad();
    }
    case 'string':
      if (typeof v === 'string') return v;
      throw bad();
    case 'bool':
      if (typeof v === 'boolean') return v;
      if (v === 'true' || v === 'false') return v === 'true';
      throw bad();
    case 'bytes':
      if (v instanceof Uint8Array) return v;
      if (typeof v === 'string') return new Uint8Array(Buffer.from(v, 'utf8'));
      throw bad();
    default:
      throw bad();
  }
}

/** Encoded split keys for CreateTable: tuples of leading range-column values, in the given order. */
export function encodeSplitPoints(columns: readonly ColumnSpec[], rangeColumns: readonly string[], points: ReadonlyArray<readonly unknown[]>): Uint8Array[] {
  if (points.length > 0 && rangeColumns.length === 0) throw invalid('split points need range primary key columns');
  return points.map((tuple, i) => {
    if (tuple.length === 0 || tuple.length > rangeColumns.length) throw invalid(`split point ${i + 1} must give 1 to ${rangeColumns.length} range column values`);
    const values = tuple.map((v, j) => {
      const name = rangeColumns[j]!;
      const c = columns.find((x) => x.name === name);
      if (!c) throw invalid(`range column ${name} is not a column`);
      return splitValue(c.type, v, name);
    });
    return encodeDocKeyBytes(0, [], values, { closeRange: false });
  });
}
