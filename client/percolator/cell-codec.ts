/**
 * JSON for Percolator's hidden columns: row values and keys hold bigint and bytes, which JSON lacks,
 * so they are tagged ({"$b": "12"}, {"$x": "0a0b"}). Read back values are checked for shape: a
 * hidden column that does not parse is CORRUPTION, never guessed at.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { ColumnValue, Row } from '../client-types';

function toJson(v: ColumnValue): unknown {
  if (typeof v === 'bigint') return { $b: v.toString() };
  if (v instanceof Uint8Array) return { $x: Buffer.from(v).toString('hex') };
  return v;
}

function fromJson(v: unknown): ColumnValue {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o['$b'] === 'string') return BigInt(o['$b']);
    if (typeof o['$x'] === 'string') return new Uint8Array(Buffer.from(o['$x'], 'hex'));
  }
  throw new DbError(ErrorCode.CORRUPTION, `percolator: a stored value is not a column value: ${JSON.stringify(v)}`);
}

export function rowToJson(r: Row): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) o[k] = toJson(v);
  return o;
}

export function rowFromJson(o: unknown): Row {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new DbError(ErrorCode.CORRUPTION, 'percolator: a stored row is not an object');
  const r: Row = {};
  for (const [k, v] of Object.entries(o as Record<string, unknown>)) r[k] = fromJson(v);
  return r;
}

/** A stable text for a key (column order fixed by the caller's key column list). */
export function keyText(table: string, key: Row, keyColumns: readonly string[]): string {
  return JSON.stringify([table, ...keyColumns.map((c) => toJson(key[c] ?? null))]);
}
