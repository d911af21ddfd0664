/**
 * Rows on the wire: protobuf values, keys and row ops to DocDB's and back, checked against the
 * tablet's schema (INVALID_ARGUMENT for what does not fit).
 */
import { isUtf8 } from 'node:buffer';
import { DbError, ErrorCode } from '../common/errors';
import { partitionHash, withLazyUtf8, type ColumnWrite, type DocKey, type Primitive, type Row, type RowOp } from '../docdb';
import type { ColumnSchema, TableSchema, TabletMeta } from './tablet/tablet-meta';
import { checkKeyInRange } from './tablet/tablet-split';
import type { WriteRequest } from './tablet/tablet-peer';
import type * as pb from './tserver-pb';

export function invalid(msg: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg);
}

export function valueFromPb(v: pb.ValuePB | null | undefined): Primitive {
  if (!v) return null;
  if (v.int64Value !== undefined && v.int64Value !== null) return BigInt(v.int64Value);
  if (v.doubleValue !== undefined && v.doubleValue !== null) return v.doubleValue;
  if (v.stringValue !== undefined && v.stringValue !== null) return v.stringValue;
  if (v.bytesValue !== undefined && v.bytesValue !== null) return v.bytesValue;
  if (v.boolValue !== undefined && v.boolValue !== null) return v.boolValue;
  if (v.utf8Value !== undefined && v.utf8Value !== null) return utf8FromPb(v.utf8Value).toString('utf8');
  return null;
}

/** A utf8Value's bytes, refused (INVALID_ARGUMENT) when they are not well-formed UTF-8. */
function utf8FromPb(b: Uint8Array): Buffer {
  const buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (!isUtf8(buf)) throw invalid('utf8_value is not well-formed UTF-8');
  return buf;
}

/**
 * A column write from its ValuePB. A string sent as bytes (utf8Value) stays bytes — checked, but
 * decoded only if something reads `value` — so the tablet's log entry gets them as they came
 * (docs/raft-write-path.md, "Large values").
 */
function columnWriteFromPb(col: ColumnSchema, v: pb.ValuePB | null | undefined): ColumnWrite {
  if (v?.utf8Value === undefined || v.utf8Value === null) {
    const value = valueFromPb(v);
    checkType(col, value, col.nullable);
    return { columnId: col.id, value };
  }
  if (col.type !== 'string') throw invalid(`column ${col.name} has type ${col.type}, got a string`);
  return withLazyUtf8({ columnId: col.id }, utf8FromPb(v.utf8Value), (b) => b.toString('utf8'));
}

export function valueToPb(v: Primitive): pb.ValuePB {
  if (v === null) return {};
  if (typeof v === 'bigint') return { int64Value: v };
  if (typeof v === 'number') return { doubleValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  return { bytesValue: v };
}

export function checkType(col: ColumnSchema, v: Primitive, allowNull: boolean): void {
  if (v === null) {
    if (!allowNull) throw invalid(`column ${col.name} must not be null`);
    return;
  }
  const ok =
    (col.type === 'int64' && typeof v === 'bigint') ||
    (col.type === 'double' && typeof v === 'number') ||
    (col.type === 'string' && typeof v === 'string') ||
    (col.type === 'bool' && typeof v === 'boolean') ||
    (col.type === 'bytes' && v instanceof Uint8Array);
  if (!ok) throw invalid(`column ${col.name} has type ${col.type}, got ${v instanceof Uint8Array ? 'bytes' : typeof v}`);
}

/** A schema's columns looked up by id, and its key columns (built once per schema object). */
export interface SchemaIndex {
  hashColumns: ColumnSchema[];
  rangeColumns: ColumnSchema[];
  byId: Map<number, ColumnSchema>;
  /** Ids of the key (hash and range) columns. */
  keyIds: Set<number>;
}

/**
 * A schema's index. Schemas are never changed in place (a CHANGE_SCHEMA gives the meta a new
 * schema object: tablet-schema.ts), so one index per object stays right; finding the key columns
 * by name for every row of a request was a share of a mutateRows row's cost (docs/rows.md).
 */
const schemaIndexes = new WeakMap<TableSchema, SchemaIndex>();

export function schemaIndex(schema: TableSchema): SchemaIndex {
  let x = schemaIndexes.get(schema);
  if (x) return x;
  const byName = new Map(schema.columns.map((c) => [c.name, c]));
  const keyColumns = (names: string[]): ColumnSchema[] => names.map((n) => byName.get(n)!);
  const hashColumns = keyColumns(schema.hashColumns);
  const rangeColumns = keyColumns(schema.rangeColumns);
  x = { hashColumns, rangeColumns, byId: new Map(schema.columns.map((c) => [c.id, c])), keyIds: new Set([...hashColumns, ...rangeColumns].map((c) => c.id)) };
  schemaIndexes.set(schema, x);
  return x;
}

export function keyFromPb(meta: TabletMeta, k: pb.DocKeyPB | null | undefined): DocKey {
  if (!k) throw invalid('row key missing');
  const hashed = (k.hashed ?? []).map(valueFromPb);
  const range = (k.range ?? []).map(valueFromPb);
  const { hashColumns: hc, rangeColumns: rc } = schemaIndex(meta.schema);
  if (hashed.length !== hc.length) throw invalid(`key needs ${hc.length} hash components, got ${hashed.length}`);
  if (range.length !== rc.length) throw invalid(`key needs ${rc.length} range components, got ${range.length}`);
  hashed.forEach((v, i) => checkType(hc[i]!, v, false));
  range.forEach((v, i) => checkType(rc[i]!, v, false));
  const hash = Number(k.hash ?? 0);
  if (!Number.isInteger(hash) || hash < 0 || hash > 0xffff) throw invalid(`key hash ${String(k.hash)} out of range`);
  if (hash !== partitionHash(hashed)) throw invalid(`key hash ${hash} does not match its hash components (expected ${partitionHash(hashed)})`);
  if (hash < meta.partition.start || hash >= meta.partition.end) {
    throw invalid(`key hash ${hash} is outside tablet ${meta.tabletId}'s partition [${meta.partition.start}, ${meta.partition.end})`);
  }
  checkKeyInRange(meta, { hash, hashed, range });
  return { hash, hashed, range };
}

export function rowOpFromPb(meta: TabletMeta, o: pb.RowOpPB): WriteRequest['ops'][number] {
  const kind = o.type ?? '';
  if (kind !== 'UPSERT' && kind !== 'INSERT' && kind !== 'UPDATE' && kind !== 'DELETE') throw invalid(`unknown row op type '${kind}'`);
  const key = keyFromPb(meta, o.key);
  if (kind === 'DELETE') return { kind, op: { type: 'delete', key } };
  const keyNames = new Set([...meta.schema.hashColumns, ...meta.schema.rangeColumns]);
  const seen = new Set<number>();
  const columns = (o.columns ?? []).map((c) => {
    const id = Number(c.columnId ?? -1);
    const col = meta.schema.columns.find((x) => x.id === id);
    if (!col) throw invalid(`unknown column id ${id}`);
    if (keyNames.has(col.name)) throw invalid(`column ${col.name} is part of the primary key; it is given in the key`);
    if (seen.has(id)) throw invalid(`column ${col.name} given twice`);
    seen.add(id);
    return columnWriteFromPb(col, c.value);
  });
  if (kind === 'INSERT') {
    for (const col of meta.schema.columns) {
      if (!col.nullable && !keyNames.has(col.name) && !seen.has(col.id)) throw invalid(`column ${col.name} must not be null`);
    }
  }
  const ttl = o.ttlMs !== undefined ? Number(o.ttlMs) : 0;
  const op: RowOp = ttl > 0 ? { type: 'upsert', key, columns, ttlMs: ttl } : { type: 'upsert', key, columns };
  return { kind, op };
}

export function keyToPb(k: DocKey): pb.DocKeyPB {
  return { hash: k.hash, hashed: k.hashed.map(valueToPb), range: k.range.map(valueToPb) };
}

export function rowToPb(r: Row): pb.RowPB {
  return { key: keyToPb(r.key), columns: [...r.columns.entries()].map(([columnId, v]) => ({ columnId, value: valueToPb(v) })), writeHt: r.writeHt };
}
