/**
 * A table's schema as the client uses it: value checks and conversions between plain rows and the
 * wire (ValuePB, DocKeyPB, RowOpPB, RowPB). Bad rows fail here with INVALID_ARGUMENT, before any RPC.
 */
import { DbError, ErrorCode } from '../common/errors';
import { LARGE_STRING_BYTES_MIN } from '../common/large-strings';
import { encodeDocKeyBytes, partitionHash, type KeyValue } from '../common/partition-hash';
import { familiesFromPb, type ColumnValuePB, type DocKeyPB, type RowOpPB, type RowPB, type TableInfoPB, type ValuePB } from '../rpc';
import { checkFamilies, type ColumnFamily } from '../common/column-families';
import type { ColumnType, ColumnValue, Row } from './client-types';

export interface ClientColumn {
  name: string;
  id: number;
  type: ColumnType;
  nullable: boolean;
  /** Its column family (docs/cells.md). */
  family: string;
}

function invalid(msg: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg);
}

const TYPES: readonly string[] = ['int64', 'double', 'string', 'bytes', 'bool'];

/** A column this schema does not have (details.unknownColumn: the table calls its schema again once, in case it was altered). */
function unknownColumn(table: string, column: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, `table ${table} has no column ${column}`, { column, unknownColumn: true });
}

export class TableSchema {
  readonly columns: ClientColumn[];
  readonly byName = new Map<string, ClientColumn>();
  readonly byId = new Map<number, ClientColumn>();
  readonly hash: ClientColumn[];
  readonly range: ClientColumn[];
  private readonly keyNames: Set<string>;
  /** The table's schema version (ALTER TABLE bumps it); every request carries it. */
  readonly version: number;
  /** Column families with their retention (docs/cells.md); `default` included when a column is in it. */
  readonly families: ColumnFamily[];

  constructor(readonly id: string, readonly name: string, info: TableInfoPB) {
    this.version = info.schemaVersion ?? 0;
    this.columns = (info.schema?.columns ?? []).map((c) => {
      if (!TYPES.includes(c.type ?? '')) throw new DbError(ErrorCode.INTERNAL, `table ${name}: column ${c.name ?? ''} has unknown type ${c.type ?? ''}`);
      return { name: c.name ?? '', id: c.id ?? 0, type: c.type as ColumnType, nullable: c.nullable === true, family: c.family || 'default' };
    });
    this.families = checkFamilies(familiesFromPb(info.schema?.families), this.columns);
    for (const c of this.columns) {
      this.byName.set(c.name, c);
      this.byId.set(c.id, c);
    }
    const col = (n: string): ClientColumn => {
      const c = this.byName.get(n);
      if (!c) throw new DbError(ErrorCode.INTERNAL, `table ${name}: key column ${n} missing from its schema`);
      return c;
    };
    this.hash = (info.schema?.hashColumns ?? []).map(col);
    this.range = (info.schema?.rangeColumns ?? []).map(col);
    this.keyNames = new Set([...this.hash, ...this.range].map((c) => c.name));
  }

  isKey(name: string): boolean {
    return this.keyNames.has(name);
  }

  /** Check and normalize one value for a column (int64 from a safe integer number -> bigint). */
  value(c: ClientColumn, v: ColumnValue | undefined): ColumnValue {
    if (v === null || v === undefined) return null;
    switch (c.type) {
      case 'int64':
        if (typeof v === 'bigint') {
          if (v < -(1n << 63n) || v > (1n << 63n) - 1n) throw invalid(`column ${c.name}: ${v} is outside int64`);
          return v;
        }
        if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
        throw invalid(`column ${c.name} is int64: expected a bigint or a safe integer, got ${describe(v)}`);
      case 'double':
        if (typeof v === 'number') return v;
        throw invalid(`column ${c.name} is double: expected a number, got ${describe(v)}`);
      case 'string':
        if (typeof v === 'string') return v;
        throw invalid(`column ${c.name} is string: expected a string, got ${describe(v)}`);
      case 'bytes':
        if (v instanceof Uint8Array) return v;
        throw invalid(`column ${c.name} is bytes: expected a Uint8Array, got ${describe(v)}`);
      case 'bool':
        if (typeof v === 'boolean') return v;
        throw invalid(`column ${c.name} is bool: expected a boolean, got ${describe(v)}`);
    }
  }

  private keyPart(cols: ClientColumn[], row: Row, what: string): KeyValue[] {
    return cols.map((c) => {
      const v = this.value(c, row[c.name]);
      if (v === null) throw invalid(`${what}: key column ${c.name} of table ${this.name} is missing or null`);
      return v;
    });
  }

  checkRowNames(row: Row): void {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) throw invalid(`a row of table ${this.name} must be a plain object { column: value }`);
    for (const k of Object.keys(row)) if (!this.byName.has(k)) throw unknownColumn(this.name, k);
  }

  /** The row's key: hash, hashed and range values (all key columns required). */
  key(row: Row): { hash: number; hashed: KeyValue[]; range: KeyValue[] } {
    this.checkRowNames(row);
    const hashed = this.keyPart(this.hash, row, 'row');
    const range = this.keyPart(this.range, row, 'row');
    return { hash: partitionHash(hashed), hashed, range };
  }

  keyPb(k: { hash: number; hashed: KeyValue[]; range: KeyValue[] }): DocKeyPB {
    return { hash: k.hash, hashed: k.hashed.map(valueToPb), range: k.range.map(valueToPb) };
  }

  /** A range table routes rows by their encoded DocKey (docs/splitting.md); a hash table by hash alone. */
  routeKey(k: { hash: number; hashed: KeyValue[]; range: KeyValue[] }): Uint8Array | undefined {
    return this.hash.length === 0 ? encodeDocKeyBytes(0, [], k.range) : undefined;
  }

  rowOp(type: 'UPSERT' | 'INSERT' | 'UPDATE' | 'DELETE', row: Row): { hash: number; op: RowOpPB; key?: Uint8Array | undefined } {
    const k = this.key(row);
    const columns: ColumnValuePB[] = [];
    if (type !== 'DELETE') {
      for (const [name, v] of Object.entries(row)) {
        if (this.isKey(name) || v === undefined) continue;
        const c = this.byName.get(name)!;
        const val = this.value(c, v);
        if (val === null && !c.nullable) throw invalid(`column ${name} of table ${this.name} must not be null`);
        columns.push({ columnId: c.id, value: columnValueToPb(val) });
      }
    }
    return { hash: k.hash, op: { type, key: this.keyPb(k), columns }, key: this.routeKey(k) };
  }

  columnIds(names: string[] | undefined): number[] {
    if (!names || names.length === 0) return [];
    return names.map((n) => {
      const c = this.byName.get(n);
      if (!c) throw unknownColumn(this.name, n);
      return c.id;
    });
  }

  rowFromPb(r: RowPB, wanted?: string[]): Row {
    const out: Row = {};
    const k = r.key ?? {};
    this.hash.forEach((c, i) => (out[c.name] = valueFromPb(k.hashed?.[i])));
    this.range.forEach((c, i) => (out[c.name] = valueFromPb(k.range?.[i])));
    const values = new Map((r.columns ?? []).map((cv) => [cv.columnId ?? -1, valueFromPb(cv.value)]));
    for (const c of this.columns) {
      if (this.isKey(c.name)) continue;
      if (wanted && wanted.length > 0 && !wanted.includes(c.name)) continue;
      out[c.name] = values.get(c.id) ?? null;
    }
    return out;
  }

  /** Scan bounds as encoded DocKey bytes ([start, end); empty = open). */
  scanBounds(hashKey: Row | undefined, rangeStart: Row | undefined, rangeEnd: Row | undefined): { hash?: number; start: Uint8Array; end: Uint8Array } {
    const prefix = (row: Row | undefined, what: string): KeyValue[] => {
      if (!row) return [];
      this.checkRowNames(row);
      const vals: KeyValue[] = [];
      for (const c of this.range) {
        if (row[c.name] === undefined) break;
        const v = this.value(c, row[c.name]);
        if (v === null) throw invalid(`${what}: range column ${c.name} must not be null`);
        vals.push(v);
      }
      for (const n of Object.keys(row)) if (!this.range.some((c) => c.name === n)) throw invalid(`${what}: ${n} is not a range column of table ${this.name}`);
      if (vals.length !== Object.keys(row).length) throw invalid(`${what} must give a prefix of the range columns (${this.range.map((c) => c.name).join(', ')})`);
      return vals;
    };
    let hash: number | undefined;
    let hashed: KeyValue[] = [];
    if (this.hash.length > 0) {
      if (!hashKey) {
        if (rangeStart || rangeEnd) throw invalid(`table ${this.name} is hash partitioned: range bounds need hashKey (values of ${this.hash.map((c) => c.name).join(', ')})`);
        return { start: new Uint8Array(0), end: new Uint8Array(0) };
      }
      this.checkRowNames(hashKey);
      hashed = this.keyPart(this.hash, hashKey, 'hashKey');
      hash = partitionHash(hashed);
    }
    const lo = prefix(rangeStart, 'rangeStart');
    const hi = prefix(rangeEnd, 'rangeEnd');
    const start = encodeDocKeyBytes(hash ?? 0, hashed, lo, { closeRange: false });
    let end: Uint8Array;
    if (rangeEnd) end = encodeDocKeyBytes(hash ?? 0, hashed, hi, { closeRange: false });
    else if (hashed.length > 0) {
      // Every key of this hash key starts with its hash prefix (+ range components): end just past
      // them — the prefix without rangeStart's values, else only keys equal to rangeStart's would be in.
      end = lo.length === 0 ? Uint8Array.from(start) : encodeDocKeyBytes(hash ?? 0, hashed, [], { closeRange: false });
      end[end.length - 1] = end[end.length - 1]! + 1;
    } else end = new Uint8Array(0);
    return { ...(hash !== undefined ? { hash } : {}), start, end };
  }
}

function describe(v: unknown): string {
  if (v instanceof Uint8Array) return 'bytes';
  if (typeof v === 'number' && !Number.isSafeInteger(v)) return `the non-integer number ${v}`;
  return typeof v;
}

export function valueToPb(v: ColumnValue): ValuePB {
  if (v === null) return {};
  if (typeof v === 'bigint') return { int64Value: v };
  if (typeof v === 'number') return { doubleValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  return { bytesValue: v };
}

/** The bound for sending a string as bytes: the tablet's for keeping it so (common/large-strings.ts). */
export const UTF8_VALUE_BYTES_MIN = LARGE_STRING_BYTES_MIN;

/**
 * A column value as sent in a write: a string of UTF8_VALUE_BYTES_MIN bytes or more goes as its
 * UTF-8 bytes (utf8Value), which the tablet carries into its log entry as they are instead of
 * decoding them into a string and encoding it again (docs/raft-write-path.md, "Large values").
 */
export function columnValueToPb(v: ColumnValue): ValuePB {
  // At most 3 UTF-8 bytes per UTF-16 unit: shorter strings are not measured.
  if (typeof v === 'string' && v.length * 3 >= UTF8_VALUE_BYTES_MIN && Buffer.byteLength(v, 'utf8') >= UTF8_VALUE_BYTES_MIN) return { utf8Value: Buffer.from(v, 'utf8') };
  return valueToPb(v);
}

export function valueFromPb(v: ValuePB | undefined | null): ColumnValue {
  if (!v) return null;
  if (v.int64Value !== undefined && v.int64Value !== null) return BigInt(v.int64Value);
  if (v.doubleValue !== undefined && v.doubleValue !== null) return v.doubleValue;
  if (v.stringValue !== undefined && v.stringValue !== null) return v.stringValue;
  if (v.bytesValue !== undefined && v.bytesValue !== null) return new Uint8Array(v.bytesValue);
  if (v.boolValue !== undefined && v.boolValue !== null) return v.boolValue;
  if (v.utf8Value !== undefined && v.utf8Value !== null) return Buffer.from(v.utf8Value.buffer, v.utf8Value.byteOffset, v.utf8Value.byteLength).toString('utf8');
  return null;
}
